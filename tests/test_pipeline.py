"""Tests for ctxcore.pipeline.spec and its YAML loader: validation, locations, safety, compile."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore.errors import ConfigError
from ctxcore.pipeline.spec import Pipeline

GOOD = """\
version: 1
name: demo
model: {context_window: 1000, reserve_output_tokens: 100}
counter: {type: approximate}
providers:
  - type: static_prompt
    text: You are helpful.
  - {type: history, id: chat}
filters:
  - type: max_messages
    max_messages: 10
  - type: token_budget
"""


def load(text: str, host, **env: str) -> Pipeline:
    return Pipeline.from_string(textwrap.dedent(text), file="p.yaml", host=host, env=env)


def issues(text: str, host, **env: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load(text, host, **env)
    return [str(i) for i in info.value.issues]


class TestValid:
    def test_good_pipeline_compiles_and_builds(self, host) -> None:
        """A valid file compiles to a builder with the declared budget and step ids."""
        p = load(GOOD, host)
        assert p.budget.max_input_tokens == 900
        b = p.builder()
        assert [s.id for s in b.providers] == ["static_prompt", "chat"]
        assert [s.id for s in b.filters] == ["max_messages", "token_budget"]
        built = p.build({"messages": [{"role": "user", "content": "hi"}]})
        assert [m.role for m in built.messages] == ["system", "user"]

    def test_step_shorthand_and_default_counter(self, host) -> None:
        """A bare string names a step; a pipeline without a counter uses 'approximate'."""
        p = load("version: 1\nproviders: [history]\n", host)
        assert p.builder().counter.name == "approximate:cl100k"

    def test_interpolation(self, host) -> None:
        """${VAR}, ${VAR:-default} and $$ are expanded in strings."""
        text = "version: 1\nname: ${NAME}\nproviders:\n  - {type: static_prompt, text: 'cost $$5 for ${WHO:-you}'}\n"
        p = load(text, host, NAME="n1")
        assert p.spec.name == "n1"
        assert p.build({}).messages[0].content == "cost $5 for you"

    def test_merge_keys(self, host) -> None:
        """'<<' merges a mapping, explicit keys winning."""
        text = """\
        version: 1
        base: &base {type: static_prompt, text: base}
        """
        assert any("unknown key 'base'" in i for i in issues(text, host))
        text = """\
        version: 1
        providers:
          - &p {type: static_prompt, text: one}
          - {<<: *p, text: two}
        """
        assert [m.content for m in load(text, host).build({}).messages] == ["one", "two"]


class TestErrors:
    def test_unknown_type_has_line_and_suggestion(self, host) -> None:
        """'tokn_budget' is reported at its line with the close registered name."""
        text = GOOD.replace("  - type: token_budget", "  - type: tokn_budget")
        [issue] = issues(text, host)
        assert issue == "p.yaml:12:11 filters[1].type: unknown filter 'tokn_budget' — did you mean 'token_budget'?"

    def test_all_errors_reported_at_once(self, host) -> None:
        """Every problem of the file comes back in one ConfigError."""
        text = """\
        version: 1
        providers:
          - type: static_promt
          - type: history
            state_kye: messages
        filters:
          - type: max_messages
            max_messages: -1
        """
        found = issues(text, host)
        assert len(found) == 3
        assert found[0].startswith("p.yaml:3:11 providers[0].type: unknown provider 'static_promt'")
        assert found[1] == "p.yaml:5:5 providers[1].state_kye: unknown key 'state_kye' for provider 'history' — did you mean 'state_key'?"
        assert found[2].startswith("p.yaml:8:19 filters[0].max_messages: Input should be greater than or equal to 0")

    def test_duplicate_keys_rejected(self, host) -> None:
        """A key written twice is an error naming the first line."""
        [issue] = issues("version: 1\nname: a\nname: b\n", host)
        assert issue == "p.yaml:3:1 name: duplicate key 'name' (first defined on line 2)"

    def test_object_tags_rejected(self, host) -> None:
        """Python object tags never construct anything."""
        found = issues("version: 1\nname: !!python/object/apply:os.system ['echo pwned']\n", host)
        assert "is not allowed" in found[0] and found[0].startswith("p.yaml:2:7 name:")

    def test_alias_bomb_capped(self, host) -> None:
        """Exponential alias expansion stops at the node cap."""
        lines = ["version: 1", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        for i in range(1, 9):
            lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
        found = issues("\n".join(lines) + "\n", host)
        assert any("alias expansion capped" in i for i in found)

    def test_size_cap(self, host) -> None:
        """A huge document is refused before parsing."""
        found = issues("version: 1\n#" + "x" * 1_000_001 + "\n", host)
        assert "larger than" in found[0]

    def test_missing_env_var(self, host) -> None:
        """An unset variable without default is located and explains the fix."""
        [issue] = issues("version: 1\nname: ${NOPE_NOT_SET}\n", host)
        assert issue.startswith("p.yaml:2:7 name: environment variable 'NOPE_NOT_SET' is not set")

    def test_syntax_error_located(self, host) -> None:
        """A YAML syntax error carries its line and column."""
        [issue] = issues("version: 1\nproviders: [\n", host)
        assert issue.startswith("p.yaml:3:1 invalid YAML")

    def test_wrong_version_and_unknown_top_key(self, host) -> None:
        """Top-level schema errors are located too."""
        found = issues("version: 2\nprovders: []\n", host)
        assert found[0].startswith("p.yaml:1:10 version: Input should be 1")
        assert found[1].startswith("p.yaml:2:1 provders: unknown key 'provders'")

    def test_duplicate_step_ids(self, host) -> None:
        """Two steps with the same id in a list are rejected."""
        found = issues("version: 1\nproviders:\n  - {type: history, id: x}\n  - {type: history, id: x}\n", host)
        assert found == ["p.yaml:4:25 providers[1].id: duplicate id 'x' (also providers[0])"]

    def test_kind_without_plugins_explains(self, host) -> None:
        """A checkpointer slot with no checkpointer plugin installed says so."""
        [issue] = issues("version: 1\ncheckpointer: {type: sqlite}\n", host)
        assert "no installed plugin provides a checkpointer" in issue

    def test_factory_failure_is_located(self, host, tmp_path) -> None:
        """A component whose factory raises is reported at its step with the cause."""
        p = load(f"version: 1\ncounter:\n  type: tiktoken\n  bpe_file: {tmp_path}/missing.tiktoken\n", host)
        with pytest.raises(ConfigError, match=r"p.yaml:3:3 counter: counter 'tiktoken' could not be created: EncodingUnavailable"):
            p.builder()

    def test_from_dict_errors_have_paths(self, host) -> None:
        """Dict pipelines report paths without lines."""
        with pytest.raises(ConfigError, match=r"<dict> filters\[0\].type: unknown filter 'nope'"):
            Pipeline.from_dict({"version": 1, "filters": [{"type": "nope"}]}, host=host)

    def test_unreadable_file(self, host, tmp_path) -> None:
        """A missing pipeline file is a ConfigError naming it."""
        with pytest.raises(ConfigError, match="cannot read pipeline file"):
            Pipeline.from_yaml(tmp_path / "nope.yaml", host=host)


def test_optional_step_that_cannot_be_created_is_skipped(host, tmp_path) -> None:
    """An optional counter that fails to build falls back to an error only if nothing is left."""
    text = f"version: 1\nproviders:\n  - type: static_prompt\n    text: hi\ncounter: {{type: tiktoken, bpe_file: {tmp_path}/x, optional: true}}\n"
    p = load(text, host)
    with pytest.raises(ConfigError, match="needs one"):
        p.builder()


class TestCollectsAcrossPhases:
    def test_yaml_and_step_problems_reported_together(self, host) -> None:
        """A duplicate key does not hide an unknown component type elsewhere in the file."""
        found = issues("version: 1\nname: a\nname: b\nfilters: [tokn_budget]\n", host)
        assert len(found) == 2
        assert "duplicate key 'name'" in found[0] and "did you mean 'token_budget'" in found[1]

    def test_schema_and_step_problems_reported_together(self, host) -> None:
        """A top-level typo and a step typo come back in one error, with suggestions."""
        found = issues("version: 1\nnme: x\nproviders: [static_promt]\n", host)
        assert found[0] == "p.yaml:2:1 nme: unknown key 'nme' — did you mean 'name'?"
        assert "did you mean 'static_prompt'" in found[1]

    def test_reserve_must_leave_room(self, host) -> None:
        """reserve_output_tokens >= context_window is a located validation error."""
        [issue] = issues("version: 1\nmodel:\n  context_window: 100\n  reserve_output_tokens: 100\n", host)
        assert issue.startswith("p.yaml:3:3 model: ") and "must be smaller than context_window (100)" in issue


def test_optional_component_that_cannot_be_created_is_reported() -> None:
    """An optional step whose factory raises is skipped, with a warning in every report."""
    from ctxcore import hookimpl
    from ctxcore.model.messages import human
    from ctxcore.testing import fresh_host

    class Plugin:
        @hookimpl
        def register_providers(self, register):
            def broken(config):
                raise ConnectionError("vector store unreachable")

            class Hi:
                def get_messages(self, state, runtime):
                    return [human("hi")]

            register("remote_memory", broken)
            register("hi", lambda config: Hi())

        @hookimpl
        def register_token_counters(self, register):
            from ctxcore_counters import ApproximateCounter

            register("approximate", lambda config: ApproximateCounter())

    p = Pipeline.from_string("version: 1\nproviders:\n  - {type: remote_memory, optional: true}\n  - hi\n", file="p.yaml", host=fresh_host(("x", Plugin())))
    built = p.build({})
    assert [m.content for m in built.messages] == ["hi"]
    assert built.report.warnings == [
        "optional p.yaml:3:5 providers[0]: provider 'remote_memory' could not be created: "
        "ConnectionError: vector store unreachable (skipped)"
    ]
    assert p.warnings == built.report.warnings


def test_suggestions_use_each_keys_own_fields(host) -> None:
    """Typos in different mappings are each matched against their own allowed keys."""
    found = issues("version: 1\nmodel: {context_windw: 10}\nnmae: x\n", host)
    assert any("context_windw' — did you mean 'context_window'?" in i for i in found)
    assert any("nmae' — did you mean 'name'?" in i for i in found)


class TestRobustness:
    @staticmethod
    def _only_config_errors(fn) -> None:
        try:
            fn()
        except ConfigError as exc:
            assert exc.issues and all(str(i) for i in exc.issues)

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.text(max_size=300))
    def test_arbitrary_text_gives_config_error_or_pipeline(self, host, text) -> None:
        """Any text either loads or raises ConfigError with located issues, never another exception."""
        self._only_config_errors(lambda: Pipeline.from_string(text, host=host, env={}))

    yaml_values = st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10), st.sampled_from(["history", "token_budget", "static_prompt"])),
        lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(st.sampled_from(["type", "id", "optional", "text", "max_tokens", "version", "providers", "filters", "model", "counter", "x"]), children, max_size=4)),
        max_leaves=12,
    )

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.dictionaries(st.sampled_from(["version", "name", "model", "counter", "providers", "filters", "memory", "checkpointer", "extra"]), yaml_values, max_size=6))
    def test_arbitrary_structures_give_config_error_or_pipeline(self, host, data) -> None:
        """Malformed pipeline structures raise ConfigError, never TypeError or KeyError."""
        self._only_config_errors(lambda: Pipeline.from_dict(data, host=host))


class TestEnabledAndPrompts:
    """Step ``enabled`` and the ``prompts:`` section (issue 3)."""

    def test_disabled_step_is_left_out(self, host) -> None:
        """enabled: false keeps a validated step out of the builder (string 'false' from ${VAR} works too)."""
        p = Pipeline.from_string(
            "version: 1\nproviders:\n  - {type: static_prompt, text: a, enabled: false}\n"
            "  - {type: static_prompt, id: b, text: b, enabled: '${ON:-true}'}\n", host=host, env={})
        assert [m.content for m in p.build({}).messages] == ["b"]

    def test_disabled_step_still_validated(self, host) -> None:
        """A disabled step with bad options is still an error (it can be switched on later)."""
        with pytest.raises(ConfigError, match="unknown key 'txt'"):
            Pipeline.from_string("version: 1\nproviders: [{type: static_prompt, txt: a, enabled: false}]\n", host=host)

    def test_prompts_section_reaches_named_prompts(self, host) -> None:
        """prompts: overrides the text a named static_prompt resolves to."""
        p = Pipeline.from_string("version: 1\nprompts: {persona: Hi there.}\nproviders: [{type: static_prompt, prompt: persona}]\n", host=host)
        assert p.build({}).messages[0].content == "Hi there."


def test_unquoted_yaml_boolean_says_quote_it(host) -> None:
    """``sanitize: off`` (YAML reads false) is an error that says to quote it, at the value's line."""
    with pytest.raises(ConfigError) as info:
        Pipeline.from_string("version: 1\ntarget:\n  sanitize: off\nproviders: [history]\n", host=host)
    (issue,) = info.value.issues
    assert issue.line == 3 and "YAML reads unquoted off as false; quote it: 'off'" in issue.message


@pytest.mark.parametrize("text", ["[" * 100_000, "a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 80)) + "  " * 80 + "v: 1\n",
                                  "version: 1\nx: " + "{a: " * 200 + "1" + "}" * 200 + "\n"])
def test_deep_nesting_is_a_config_error(host, text: str) -> None:
    """Nesting past the limit (or past the parser's stack) is a ConfigError, never a RecursionError."""
    with pytest.raises(ConfigError, match="nested"):
        Pipeline.from_string(text, host=host)
