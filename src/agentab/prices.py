"""What a model's tokens cost, for the runs whose harness reports tokens only.

pi and Claude Code report each run's cost in their stream; Codex and Gemini CLI report tokens
only. A scenario's `[protocol] budget_usd` must count every run, so a run whose harness states
no cost is priced here: its input and output tokens × the model's list price. The table is
dated and names its sources: a price changes, and a cost computed from it says which table it
came from (`run.json` → `cost`). A model the table does not hold has no known cost; a budget is
then refused at load for a harness that reports none (`agentab check`), rather than guessed.

Prices are USD per million tokens, list prices of the provider's own API, standard tier, for
prompts within the smallest context tier. Cache reads and writes count at the input price: an
upper bound, since providers discount cache reads.

The Anthropic figures were checked against Anthropic's model pages on 2026-12-04 (the 4.1 and
earlier ones through their Batch API prices, half the standard ones); the OpenAI and Google
figures are their list prices as of the table's date and were not checked again since. A model
released after them is not in the table: add it with its pinned id, its price and the date.
"""

from __future__ import annotations

from dataclasses import dataclass

TABLE_DATE = "2025-10-15"
SOURCES = {
    "anthropic": "https://www.anthropic.com/pricing#api",
    "openai": "https://openai.com/api/pricing/",
    "google": "https://ai.google.dev/gemini-api/docs/pricing",
}


@dataclass(frozen=True)
class Price:
    """USD per million tokens, and where the figures come from."""

    input: float
    output: float
    source: str

    def cost_usd(self, tokens: dict) -> float:
        """The cost of a run's tokens (`input`, `output`, and cache tokens at the input price)."""
        read = sum(_count(tokens.get(key)) for key in ("input", "cache_read", "cache_write"))
        return (read * self.input + _count(tokens.get("output")) * self.output) / 1_000_000


# model id -> (input, output), USD per million tokens, by the provider that lists it.
_TABLE: dict[str, dict[str, tuple[float, float]]] = {
    "anthropic": {
        "claude-opus-4-5-20251101": (5.0, 25.0),
        "claude-opus-4-1-20250805": (15.0, 75.0),
        "claude-opus-4-20250514": (15.0, 75.0),
        "claude-sonnet-4-5-20250929": (3.0, 15.0),
        "claude-sonnet-4-20250514": (3.0, 15.0),
        "claude-haiku-4-5-20251001": (1.0, 5.0),
        "claude-3-5-haiku-20241022": (0.8, 4.0),
    },
    "openai": {
        "gpt-5": (1.25, 10.0),
        "gpt-5-codex": (1.25, 10.0),
        "gpt-5-mini": (0.25, 2.0),
        "gpt-5-nano": (0.05, 0.4),
        "gpt-4.1": (2.0, 8.0),
        "gpt-4.1-mini": (0.4, 1.6),
        "o4-mini": (1.1, 4.4),
    },
    "google": {
        "gemini-2.5-pro": (1.25, 10.0),
        "gemini-2.5-flash": (0.3, 2.5),
        "gemini-2.5-flash-lite": (0.1, 0.4),
    },
}


def table_price(model: str) -> Price | None:
    """The list price of a model id, from whichever provider lists it; None when unknown.

    A model reached through another provider (pi's `openrouter`, a gateway) is looked up by
    its id alone, with any `vendor/` prefix dropped: the same model, at its maker's price."""
    bare = model.rpartition("/")[2]
    for vendor, models in _TABLE.items():
        if bare in models:
            cost_in, cost_out = models[bare]
            return Price(cost_in, cost_out, f"price table of {TABLE_DATE} ({SOURCES[vendor]})")
    return None


def priced_models() -> list[str]:
    """Every model id the table prices, for a message that names them."""
    return sorted(model for models in _TABLE.values() for model in models)


def _count(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
