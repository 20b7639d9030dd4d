"""PNG reports: logged, nominal-model and calibrated-model responses side by side."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np


def plot_joint_responses(
    path: Path,
    t: np.ndarray,
    joints: tuple[str, ...],
    logged: np.ndarray,
    nominal: np.ndarray,
    calibrated: np.ndarray,
    title: str,
) -> Path:
    """One panel per joint: measured position from the log, and from re-simulating the
    logged commands with the nominal and with the calibrated model."""
    fig, axes = plt.subplots(len(joints), 1, figsize=(10, 2.0 * len(joints)), sharex=True)
    for ax, k in zip(np.atleast_1d(axes), range(len(joints)), strict=True):
        ax.plot(t, logged[:, k], "k", lw=1.2, label="logged")
        ax.plot(t, nominal[:, k], "C3", lw=0.8, label="nominal model")
        ax.plot(t, calibrated[:, k], "C0--", lw=0.8, label="calibrated model")
        ax.set_ylabel(joints[k].removesuffix("_joint"), fontsize=7)
    np.atleast_1d(axes)[0].legend(loc="upper right", fontsize=7)
    np.atleast_1d(axes)[-1].set_xlabel("t (s)")
    fig.suptitle(f"{title}: joint position (rad)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def plot_imu(path: Path, log, fit: dict) -> Path:
    fig, axes = plt.subplots(2, 1, figsize=(9, 5), sharex=True)
    for ax, data, key, unit in (
        (axes[0], log.gyro, "gyro_bias", "rad/s"),
        (axes[1], log.accel, "accel_bias", "m/s^2"),
    ):
        if key not in fit:
            continue
        for a in range(3):
            ax.plot(log.t, data[:, a], f"C{a}", lw=0.8, label=f"logged {'xyz'[a]}")
            ax.axhline(fit[key][a].value, color=f"C{a}", ls="--", lw=0.8)
        ax.set_ylabel(f"{key} ({unit})")
        ax.legend(fontsize=7)
    axes[1].set_xlabel("t (s)")
    fig.suptitle("IMU: logged (solid) and fitted bias (dashed; accel: bias relative to gravity)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def plot_trajectories(
    path: Path,
    t: np.ndarray,
    logged: np.ndarray,
    nominal: np.ndarray,
    aligned: np.ndarray,
    names: tuple[str, str],
) -> Path:
    """Sensor A's logged position against B's mapped into A's world with the identity
    transform (nominal) and with the fitted one (aligned), per axis."""
    fig, axes = plt.subplots(3, 1, figsize=(10, 6), sharex=True)
    for k, ax in enumerate(axes):
        ax.plot(t, logged[:, k], "k", lw=1.2, label=f"logged {names[0]}")
        ax.plot(t, nominal[:, k], "C3", lw=0.8, label=f"{names[1]}, identity extrinsics")
        ax.plot(t, aligned[:, k], "C0--", lw=0.8, label=f"{names[1]}, calibrated extrinsics")
        ax.set_ylabel(f"{'xyz'[k]} (m)")
    axes[0].legend(loc="upper right", fontsize=7)
    axes[-1].set_xlabel("t (s)")
    fig.suptitle(f"extrinsics: {names[0]} position in its world, logged and predicted")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
