"""The LLM weights' key names the model, not the machine it is served from."""

from graph.llm_calibration import portable_model_name


def test_a_served_file_path_keys_by_the_file_name_alone():
    here = portable_model_name("/root/.cache/recloop/llm/qwen2.5-coder-0.5b-instruct.gguf")
    there = portable_model_name("/srv/models/qwen2.5-coder-0.5b-instruct.gguf")
    assert here == there == "qwen2.5-coder-0.5b-instruct.gguf"


def test_hub_style_and_plain_names_are_kept_as_reported():
    assert portable_model_name("Qwen/Qwen2.5-0.5B-Instruct") == "Qwen/Qwen2.5-0.5B-Instruct"
    assert portable_model_name("gpt-4o-mini") == "gpt-4o-mini"
