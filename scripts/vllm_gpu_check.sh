#!/usr/bin/env bash
# The vLLM throughput comparison of scripts/vllm_side_by_side.py (Grail's logits processor
# against vLLM's xgrammar and guidance backends, batches 1, 8 and 32, json.gbnf, the
# tool-call grammar and a MaskBench schema) on a machine with an NVIDIA GPU, with PyPI's
# CUDA build of vLLM and a model of your choosing:
#
#     scripts/vllm_gpu_check.sh MODEL [VENV]
#
# MODEL: a Hugging Face model folder, or a hub id if the machine may download it.
# VENV: where to install vLLM and Grail's Python package (default ~/.cache/grail/vllm-gpu-venv);
# a Rust toolchain builds the package. Writes vllm-gpu-check.json in the current folder
# and prints the table. Needs ../shared/bench beside the checkout for the grammars (as
# every benchmark here).
set -euo pipefail
model="${1:?usage: scripts/vllm_gpu_check.sh MODEL [VENV]}"
venv="${2:-${XDG_CACHE_HOME:-$HOME/.cache}/grail/vllm-gpu-venv}"
repo="$(cd "$(dirname "$0")/.." && pwd)"

command -v nvidia-smi >/dev/null 2>&1 || { echo "error: no nvidia-smi: this script is for a machine with an NVIDIA GPU (on a CPU, run scripts/vllm_side_by_side.py)" >&2; exit 1; }
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet vllm
"$venv/bin/python" -m pip install --quiet "$repo/crates/grail-py"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
"$venv/bin/python" -c "import vllm, torch; print('vLLM', vllm.__version__, 'torch', torch.__version__, 'CUDA', torch.cuda.is_available())"
exec "$venv/bin/python" "$repo/scripts/vllm_side_by_side.py" --python "$venv/bin/python" --model "$model" \
    --json vllm-gpu-check.json
