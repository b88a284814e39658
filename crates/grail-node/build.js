#!/usr/bin/env node
// Builds the native addon (`npm install` runs this): `napi build --platform --release`
// from @napi-rs/cli, into this folder as grail-gbnf.<platform>-<arch>[-<abi>].node.
//
// The crate is a member of Grail's Cargo workspace, so it builds from the repository
// (`npm install ./crates/grail-node`), into the workspace's target directory. npm installs
// a local folder as a symlink and then does not install the folder's own dependencies;
// when @napi-rs/cli is missing here, it is installed into this folder first.
//
// Environment: GRAIL_NODE_PROFILE=debug builds without --release (faster to build, much
// slower to run); GRAIL_NODE_SKIP_BUILD=1 skips the build (an addon already built).
'use strict'

const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const here = __dirname

function run(command, args, options = {}) {
  const shown = [command, ...args].join(' ')
  console.log(`grail-gbnf: ${shown}`)
  const result = spawnSync(command, args, { cwd: here, stdio: 'inherit', ...options })
  if (result.error) {
    return { ok: false, why: `${shown}: ${result.error.message}` }
  }
  return { ok: result.status === 0, why: `${shown} exited with status ${result.status}` }
}

function fail(message) {
  console.error(`grail-gbnf: ${message}`)
  process.exit(1)
}

function napiCli() {
  try {
    const manifest = require.resolve('@napi-rs/cli/package.json', { paths: [here] })
    const bin = require(manifest).bin
    return path.join(path.dirname(manifest), typeof bin === 'string' ? bin : bin.napi)
  } catch {
    return null
  }
}

function main() {
  if (process.env.GRAIL_NODE_SKIP_BUILD === '1') {
    console.log('grail-gbnf: GRAIL_NODE_SKIP_BUILD=1: not building the addon')
    return
  }
  // The workspace: path dependencies on the other Grail crates.
  if (!fs.existsSync(path.join(here, '..', '..', 'Cargo.toml'))) {
    fail(
      'this package builds from the Grail repository (its Cargo workspace): install it with ' +
        '`npm install <grail checkout>/crates/grail-node`'
    )
  }
  const cargo = spawnSync('cargo', ['--version'], { stdio: 'ignore' })
  if (cargo.error || cargo.status !== 0) {
    fail('cargo was not found: building the addon needs a Rust toolchain (1.88 or later)')
  }
  let cli = napiCli()
  if (!cli) {
    // A symlinked install: npm left this folder's dependencies out.
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
    const installed = run(npm, [
      'install',
      '--ignore-scripts',
      '--no-save',
      '--no-package-lock',
      '--no-audit',
      '--no-fund',
    ])
    cli = installed.ok ? napiCli() : null
    if (!cli) {
      fail(`@napi-rs/cli could not be installed (${installed.why})`)
    }
  }
  const args = [
    cli,
    'build',
    '--platform',
    '--manifest-path',
    'Cargo.toml',
    '--package-json-path',
    'package.json',
    '--output-dir',
    '.',
    // index.js (hand-written) loads the addon; the generated definitions are kept as
    // native.d.ts, next to the hand-written index.d.ts.
    '--no-js',
    '--dts',
    'native.d.ts',
  ]
  if (process.env.GRAIL_NODE_PROFILE !== 'debug') {
    args.push('--release')
  }
  const env = { ...process.env }
  // Share the one build with Cargo's other users of the workspace; two jobs by default
  // (a small machine builds the rest of the workspace too).
  if (!env.CARGO_BUILD_JOBS) {
    env.CARGO_BUILD_JOBS = '2'
  }
  const built = run(process.execPath, args, { env })
  if (!built.ok) {
    fail(`the addon could not be built (${built.why})`)
  }
}

main()
