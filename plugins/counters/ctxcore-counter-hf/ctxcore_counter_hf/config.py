"""Config model of the ``huggingface`` counter (kept apart so loading the plugin imports nothing heavy)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["HuggingFaceConfig"]


class HuggingFaceConfig(BaseModel):
    """Options of the ``huggingface`` counter."""

    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(default=None, description="A tokenizer.json file or a local tokenizer directory.")
    # A YAML file can only leave it null: the JSON Schema says so (`ctx pipeline schema`).
    tokenizer: Any = Field(default=None, description="A tokenizer object already loaded (Python only), instead of path.",
                           json_schema_extra={"type": "null"})
    chat_template: str | None = Field(default=None, description="Jinja chat template text or a path to a .jinja file; overrides the directory's.")
    use_chat_template: bool = Field(default=True, description="Count messages through the chat template when there is one.")
    image_tokens: int | None = Field(default=None, ge=0, description="Flat tokens per image; default: OpenAI's tile rule.")

    @model_validator(mode="after")
    def _one_source(self) -> HuggingFaceConfig:
        if (self.path is None) == (self.tokenizer is None):
            raise ValueError("give exactly one of 'path' (a local tokenizer) or 'tokenizer' (a loaded tokenizer object, Python only)")
        return self
