"""HuggingFace token counter for ctxcore (``huggingface``)."""
