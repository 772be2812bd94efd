"""Config model of the ``huggingface`` counter (kept apart so loading the plugin imports nothing heavy)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["HuggingFaceConfig"]


class HuggingFaceConfig(BaseModel):
    """Options of the ``huggingface`` counter."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="A tokenizer.json file or a local tokenizer directory.")
    chat_template: str | None = Field(default=None, description="Jinja chat template text or a path to a .jinja file; overrides the directory's.")
    use_chat_template: bool = Field(default=True, description="Count messages through the chat template when there is one.")
    image_tokens: int | None = Field(default=None, ge=0, description="Flat tokens per image; default: OpenAI's tile rule.")
