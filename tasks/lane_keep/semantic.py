"""The semantic channel: a pluggable SemanticEncoder turning the scene into caption tokens.

Providers (task.semantic.provider):

- `captions` (default): the caption is built from the simulator's ground truth
  (`captions.caption_tokens`). On a real car the same facts need a map and
  localisation (road curvature ahead, lane width), a perception stack (obstacles and
  their lane) and a road-surface estimate: the provider is an oracle of what a
  captioning model could say at best.
- `blip`: a BLIP image-captioning model (Hugging Face `transformers`, the optional
  extra `simreal[blip]`) captions the car's forward camera image, rendered by MuJoCo;
  its words are mapped onto the caption vocabulary (unknown words become <unk>). On a
  real car it needs only the camera and enough compute for the model at 2 Hz. Weights
  are loaded from a local directory (`task.semantic.blip_weights`); nothing is ever
  downloaded.
- `none`: no semantic channel (the observation has no caption tokens).

Encoders are called only for the simulations whose caption is due (every
`refresh_steps` control steps), off the physics hot path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from simreal.tasks.lane_keep.captions import NUM_TOKENS, SceneFacts, caption_tokens, tokenize

PROVIDERS = ("captions", "blip", "none")


class SemanticEncoder(Protocol):
    num_tokens: int

    def encode(self, env, ids: np.ndarray) -> np.ndarray:
        """(len(ids), num_tokens) int64 caption tokens for simulations `ids` of `env`."""


class CaptionEncoder:
    """Ground-truth captions, for every simulation at once."""

    num_tokens = NUM_TOKENS

    def encode(self, env, ids: np.ndarray) -> np.ndarray:
        facts: SceneFacts = env.scene_facts()
        rows = SceneFacts(*(getattr(facts, f)[ids] for f in SceneFacts.__dataclass_fields__))
        return caption_tokens(rows)


class NoEncoder:
    num_tokens = 0

    def encode(self, env, ids: np.ndarray) -> np.ndarray:
        return np.zeros((ids.size, 0), dtype=np.int64)


class BlipEncoder:
    """BLIP captions of the forward camera image (one render and one generate per
    simulation due; slow, so meant for evaluation and studies, not for training)."""

    num_tokens = NUM_TOKENS

    def __init__(self, weights: str, image_size: tuple[int, int] = (384, 384)):
        path = Path(weights) if weights else None
        if path is None or not path.is_dir() or not (path / "config.json").is_file():
            raise FileNotFoundError(
                "task.semantic.blip_weights: the blip provider needs a local directory with a "
                "BLIP captioning model (config.json and weights, e.g. saved with "
                f"save_pretrained); got {weights!r}. Nothing is downloaded at run time."
            )
        try:
            from transformers import BlipForConditionalGeneration, BlipProcessor
        except ImportError as err:
            raise ImportError(
                "task.semantic.provider=blip needs transformers: pip install 'simreal[blip]'"
            ) from err
        from simreal.sim.render import select_gl_backend

        select_gl_backend()  # the camera renders offscreen
        self.processor = BlipProcessor.from_pretrained(path, local_files_only=True)
        self.model = BlipForConditionalGeneration.from_pretrained(path, local_files_only=True)
        self.model.eval()
        self.image_size = image_size
        self.last_text: list[str] = []

    def encode(self, env, ids: np.ndarray) -> np.ndarray:
        import torch

        from simreal.tasks.lane_keep.camera import render_forward

        images = [render_forward(env, int(i), *self.image_size) for i in ids]
        inputs = self.processor(images=images, return_tensors="pt")
        with torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=20)
        self.last_text = self.processor.batch_decode(out, skip_special_tokens=True)
        return np.stack([tokenize(text, self.num_tokens) for text in self.last_text])


def make_encoder(provider: str, blip_weights: str = "") -> SemanticEncoder:
    if provider == "captions":
        return CaptionEncoder()
    if provider == "none":
        return NoEncoder()
    if provider == "blip":
        return BlipEncoder(blip_weights)
    raise ValueError(f"task.semantic.provider: {provider!r} is not one of {list(PROVIDERS)}")
