"""agent.yaml written in Python: the same components, assembled by hand (no plugin lookup)."""

from ctxcore import ContextBuilder, ModelBudget, Step
from ctxcore_counters import TiktokenCounter
from ctxcore_filters import TokenBudget
from ctxcore_providers import History, StaticPrompt

builder = ContextBuilder(
    providers=[
        StaticPrompt("You are a careful coding agent. Read files before answering questions about them."),
        Step(id="chat", component=History()),  # the YAML's `id: chat`
    ],
    filters=[TokenBudget()],
    counter=TiktokenCounter("o200k_base"),
    budget=ModelBudget(context_window=2000, reserve_output_tokens=300),
)
