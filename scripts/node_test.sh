#!/usr/bin/env bash
# The Node package's tests: `npm install ./crates/grail-node` into
# ~/.cache/grail/node-test (the install builds the addon with @napi-rs/cli, in release mode,
# into the workspace's target directory), a type check of index.d.ts with TypeScript where
# it can be installed, then the tests under crates/grail-node/test with Node's own test
# runner (TAP output, ending with its `# pass N` / `# fail N` summary).
#
#     scripts/node_test.sh [node --test arguments]
#
# The comparisons with the CLI use target/debug/grail (`cargo build -p grail-cli`; the
# test command builds it first) and skip with a message without it; those on llama.cpp's
# grammars and the real vocabularies skip when ../shared is absent. Without node and npm,
# or without the npm registry for the build tool, this says "skipped:" and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "skipped: the Node package tests: node and npm are not installed"
    exit 0
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
    echo "skipped: the Node package tests: Node $(node --version) is older than 18"
    exit 0
fi

cache="${XDG_CACHE_HOME:-$HOME/.cache}/grail/node-test"
mkdir -p "$cache"
if [ ! -f "$cache/package.json" ]; then
    (cd "$cache" && npm init -y >/dev/null)
fi

echo "npm install ./crates/grail-node (into $cache)"
if ! (cd "$cache" && npm install --no-audit --no-fund --foreground-scripts "$repo/crates/grail-node"); then
    if ! npm view @napi-rs/cli version >/dev/null 2>&1; then
        echo "skipped: the Node package tests: the npm registry cannot be reached for @napi-rs/cli"
        exit 0
    fi
    echo "error: npm install ./crates/grail-node failed (see above)"
    exit 1
fi
package="$cache/node_modules/grail-gbnf"

# index.d.ts type-checks, with a file that uses the whole API (tsc from npm, cached).
if (cd "$cache" && npm install --no-audit --no-fund --no-save typescript@5 @types/node@20 >/dev/null 2>&1); then
    echo "tsc --noEmit crates/grail-node/test/types.ts"
    cp "$repo/crates/grail-node/test/types.ts" "$cache/types-check.ts"
    (cd "$cache" && node_modules/.bin/tsc --noEmit --strict --esModuleInterop --module commonjs \
        --target es2022 --types node types-check.ts)
else
    echo "skipped: the type check of index.d.ts: TypeScript could not be installed from npm"
fi

export GRAIL_GBNF_PACKAGE="$package"
exec node --test --test-reporter=tap "$@" "$repo"/crates/grail-node/test/*.test.js "$repo"/crates/grail-node/test/*.test.mjs
