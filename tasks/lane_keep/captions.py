"""Ground-truth scene captions as fixed-slot token sequences, batched over simulations.

A caption is nine words in a fixed template (a tenth slot pads), e.g.
"road curves left sharply obstacle left-lane near lane narrows"; each
slot takes one word from a small vocabulary, so captions for all simulations are built
with array operations and decode back to text for people and for comparison with a
captioning model's output. Token 0 pads, token 1 stands for an unknown word.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VOCAB: tuple[str, ...] = (
    "<pad>",
    "<unk>",
    "road",
    "straight",
    "curves",
    "left",
    "right",
    "ahead",
    "gently",
    "moderately",
    "sharply",
    "obstacle",
    "none",
    "ego-lane",
    "left-lane",
    "shoulder",
    "near",
    "far",
    "lane",
    "narrows",
    "normal",
    "surface",
    "dry",
    "slippery",
)
WORD_ID = {w: i for i, w in enumerate(VOCAB)}
NUM_TOKENS = 10
SHARPNESS = ("ahead", "gently", "moderately", "sharply")
"""Curvature buckets, straight first; bounds in SHARPNESS_RADIUS_M."""
SHARPNESS_RADIUS_M = (300.0, 80.0, 40.0)
"""Radius (m) below which the road counts as gently, moderately, sharply curved."""
CAPTION_SPEED_MPS = (10.0, 9.0, 7.0, 5.0)
"""The speed (m/s) a caption's sharpness word asks for: what "slow down before a sharp
curve" means in the semantic-alignment reward."""
OBSTACLE_NEAR_M = 20.0


@dataclass
class SceneFacts:
    """Ground truth a caption describes, per simulation (N,)."""

    curvature_ahead: np.ndarray
    """Signed curvature of largest magnitude within the caption's look-ahead (1/m)."""
    obstacle_place: np.ndarray
    """Place index (roads.PLACES) of the nearest obstacle ahead, -1 for none."""
    obstacle_dist: np.ndarray
    """Its distance ahead along the road (m)."""
    narrowing: np.ndarray
    """bool: the lane narrows ahead."""


def sharpness(curvature: np.ndarray) -> np.ndarray:
    """(N,) bucket index into SHARPNESS."""
    radius = 1.0 / np.maximum(np.abs(curvature), 1e-9)
    return (
        (radius < SHARPNESS_RADIUS_M[0]).astype(int)
        + (radius < SHARPNESS_RADIUS_M[1])
        + (radius < SHARPNESS_RADIUS_M[2])
    )


def caption_tokens(f: SceneFacts) -> np.ndarray:
    """(N, NUM_TOKENS) int64 token ids of the captions of `f`."""
    n = f.curvature_ahead.shape[0]
    sharp = sharpness(f.curvature_ahead)
    curved = sharp > 0
    w = WORD_ID
    tok = np.zeros((n, NUM_TOKENS), dtype=np.int64)
    tok[:, 0] = w["road"]
    tok[:, 1] = np.where(curved, w["curves"], w["straight"])
    side = np.where(f.curvature_ahead > 0, w["left"], w["right"])
    tok[:, 2] = np.where(curved, side, w["ahead"])
    tok[:, 3] = np.array([w[s] for s in SHARPNESS])[sharp]
    tok[:, 4] = w["obstacle"]
    # PLACES: ego_lane, left_lane, right_shoulder, left_shoulder
    place_word = np.array([w["ego-lane"], w["left-lane"], w["shoulder"], w["shoulder"]])
    has = f.obstacle_place >= 0
    tok[:, 5] = np.where(has, place_word[np.maximum(f.obstacle_place, 0)], w["none"])
    tok[:, 6] = np.where(
        has, np.where(f.obstacle_dist < OBSTACLE_NEAR_M, w["near"], w["far"]), w["none"]
    )
    tok[:, 7] = w["lane"]
    tok[:, 8] = np.where(f.narrowing, w["narrows"], w["normal"])
    # The tenth slot once named the surface's friction, which neither the camera nor the
    # LiDAR measures: it pads now (the vocabulary keeps its words, so old policies load).
    return tok


def caption_speed(tokens: np.ndarray, target_speed: float) -> np.ndarray:
    """(N,) the speed (m/s) a caption asks for: its curve word's speed, slower for an
    obstacle near in the own lane (or a slippery surface, in an older caption), never
    above `target_speed`."""
    speeds = np.full(len(VOCAB), np.inf)
    for word, v in zip(SHARPNESS, CAPTION_SPEED_MPS, strict=True):
        speeds[WORD_ID[word]] = v
    v = speeds[tokens[:, 3]]
    v = np.where(np.isfinite(v), v, target_speed)
    blocked = (tokens[:, 5] == WORD_ID["ego-lane"]) & (tokens[:, 6] == WORD_ID["near"])
    v = np.where(blocked, np.minimum(v, 3.0), v)
    v = np.where(tokens[:, 9] == WORD_ID["slippery"], 0.8 * v, v)
    return np.minimum(v, target_speed)


def decode(tokens: np.ndarray) -> str:
    """The caption text of one token row."""
    return " ".join(VOCAB[t] for t in tokens if t != 0)


SYNONYMS: dict[str, str] = {
    # what a captioning model says of a road scene, in the template's words
    "street": "road", "highway": "road", "roadway": "road", "lane": "lane", "lanes": "lane",
    "curve": "curves", "curved": "curves", "curvy": "curves", "curving": "curves",
    "bend": "curves", "bends": "curves", "bending": "curves", "turn": "curves",
    "turns": "curves", "turning": "curves", "winding": "curves",
    "car": "obstacle", "cars": "obstacle", "truck": "obstacle", "van": "obstacle",
    "vehicle": "obstacle", "vehicles": "obstacle", "cone": "obstacle", "cones": "obstacle",
    "parked": "obstacle", "barrier": "obstacle",
    "narrow": "narrows", "narrowing": "narrows", "sharp": "sharply", "slight": "gently",
    "slightly": "gently", "gentle": "gently", "side": "shoulder", "roadside": "shoulder",
    "close": "near", "nearby": "near", "distance": "far", "distant": "far",
}  # fmt: skip
"""Words a captioning model (BLIP) uses for what the template names: mapped onto the
template's vocabulary instead of counting as unknown."""
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "on",
        "in",
        "at",
        "with",
        "to",
        "is",
        "are",
        "there",
        "and",
        "its",
        "it",
        "this",
        "that",
        "by",
        "down",
        "along",
        "driving",
        "drives",
        "going",
        "goes",
        "view",
        "image",
        "picture",
        "photo",
        "from",
        "into",
    ]
)
"""Words that carry nothing the policy's vocabulary could hold: dropped, not <unk>."""


def tokenize(text: str, length: int = NUM_TOKENS) -> np.ndarray:
    """(length,) token ids of free text: stop words dropped, a captioning model's words
    mapped onto the vocabulary (SYNONYMS), other unknown words to <unk>."""
    words = text.lower().replace(",", " ").replace(".", " ").split()
    words = [SYNONYMS.get(w, w) for w in words if w not in STOP_WORDS][:length]
    ids = [WORD_ID.get(word, WORD_ID["<unk>"]) for word in words]
    return np.array(ids + [0] * (length - len(ids)), dtype=np.int64)
