"""Training logs: TensorBoard events, metrics.csv and the learning-curve PNG."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from simreal.policies.checkpoint import atomic_write_bytes

CSV_FIELDS = (
    "iteration",
    "env_steps",
    "wall_time_s",
    "steps_per_s",
    "time_collect_s",
    "time_update_s",
    "time_physics_s",
    "time_task_s",
    "time_policy_s",
    "train_return",
    "train_episode_length",
    "eval_return",
    "value_loss",
    "surrogate_loss",
    "entropy",
    "kl",
    "learning_rate",
    "action_std",
    "unstable_resets",
    "imitation_loss",
    "estimation_loss",
)


class TrainingLogger:
    def __init__(
        self,
        log_dir: Path,
        reward_terms: list[str],
        curriculum_terms: tuple[str, ...] = (),
        resumed_at: int = 0,
    ):
        """`resumed_at`: the iteration of the checkpoint a resumed run starts from. Rows
        past it were logged by a process that died before its next checkpoint (a kill, a
        machine that went away); the resumed run trains those iterations again, so their
        old rows go, and the file keeps one row per iteration the model went through."""
        from torch.utils.tensorboard import SummaryWriter

        self.log_dir = log_dir
        log_dir.mkdir(parents=True, exist_ok=True)
        self.fields = (
            list(CSV_FIELDS)
            + [f"reward/{t}" for t in reward_terms]
            + [f"curriculum/{t}" for t in curriculum_terms]
        )
        self.csv_path = log_dir / "metrics.csv"
        new = not self.csv_path.exists()
        if not new:  # a resumed run keeps the columns its file has
            self.fields = _keep_rows_through(self.csv_path, resumed_at) or self.fields
        self._open_for_append()
        if new:
            self._csv.writeheader()
        self.tb = SummaryWriter(log_dir=str(log_dir))

    def log(self, row: dict[str, float | int | None]) -> None:
        new = sorted(k for k in row if k.startswith("episode/") and k not in self.fields)
        if new:
            self._add_columns(new)
        self._csv.writerow({k: ("" if row.get(k) is None else row[k]) for k in self.fields})
        self._csv_file.flush()
        step = int(row["env_steps"])
        for key, value in row.items():
            if isinstance(value, (int, float)) and key not in ("iteration", "env_steps"):
                self.tb.add_scalar(key if "/" in key else f"train/{key}", float(value), step)

    def _add_columns(self, keys: list[str]) -> None:
        """The task's episode outcomes (`episode/...`: fall rate, curriculum caps, ...) are
        known only once episodes end, often after the first rows: the file is rewritten
        (atomically) with them as new columns, blank in the rows before, so that
        metrics.csv, which results commit, holds them and not only TensorBoard."""
        self._csv_file.close()
        self.fields = [*self.fields, *keys]
        with self.csv_path.open(newline="") as f:
            rows = list(csv.DictReader(f))
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=self.fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        atomic_write_bytes(self.csv_path, text.getvalue().encode())
        self._open_for_append()

    def _open_for_append(self) -> None:
        self._csv_file = self.csv_path.open("a", newline="")
        self._csv = csv.DictWriter(self._csv_file, fieldnames=self.fields, extrasaction="ignore")

    def log_evaluation(self, env_steps: int, metrics: dict) -> None:
        """Every numeric evaluation metric (task metrics included) under eval/ in TensorBoard."""
        for key, value in metrics.items():
            if isinstance(value, (int, float)):
                self.tb.add_scalar(f"eval/{key}", float(value), env_steps)

    def write_curve(self) -> None:
        """Plot train and evaluation return against env steps and wall time."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rows = list(csv.DictReader(self.csv_path.open()))
        if not rows:
            return
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        for ax, x_key, label in (
            (axes[0], "env_steps", "env steps"),
            (axes[1], "wall_time_s", "wall time (s)"),
        ):
            x = [float(r[x_key]) for r in rows if r["train_return"]]
            y = [float(r["train_return"]) for r in rows if r["train_return"]]
            ax.plot(x, y, label="train (stochastic)")
            ex = [float(r[x_key]) for r in rows if r["eval_return"]]
            ey = [float(r["eval_return"]) for r in rows if r["eval_return"]]
            ax.plot(ex, ey, "o-", label="evaluation (deterministic)")
            ax.set_xlabel(label)
            ax.set_ylabel("episode return")
            ax.grid(alpha=0.3)
        axes[0].legend()
        fig.suptitle(self.log_dir.parent.name + " / " + self.log_dir.name)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90)
        plt.close(fig)
        atomic_write_bytes(self.log_dir / "curve.png", buf.getvalue())

    def close(self) -> None:
        self._csv_file.close()
        self.tb.close()


def _keep_rows_through(csv_path: Path, iteration: int) -> list[str] | None:
    """Rewrite metrics.csv (atomically) without the rows logged after `iteration`;
    returns the file's columns (None for an empty file)."""
    with csv_path.open(newline="") as f:
        lines = f.read().splitlines(keepends=True)
    if not lines:
        return None
    fields = next(csv.reader(lines[:1]))
    column = fields.index("iteration")
    rows = lines[1:]
    keep = [
        line
        for line, row in zip(rows, csv.reader(rows), strict=True)
        if int(row[column]) <= iteration
    ]
    if len(keep) < len(rows):
        atomic_write_bytes(csv_path, "".join(lines[:1] + keep).encode())
    return fields
