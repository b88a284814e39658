// Grail's next-character rules through Node equal the Rust CLI's (`grail next --format
// json`) and the corpus's expectations: testdata/match/*.match, llama.cpp's example
// grammars and its grammar test cases (../shared/conformance/llama.cpp).
'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const {
  grail,
  shared,
  hasShared,
  cliPath,
  cliJson,
  matchCorpus,
  cliShape,
  corpusShape,
} = require('./helpers.js')

const { GBNF, InputParseError } = grail
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'grail-node-test-'))
process.on('exit', () => fs.rmSync(scratch, { recursive: true, force: true }))

function grammarFile(name, text) {
  const file = path.join(scratch, name)
  fs.writeFileSync(file, text)
  return file
}

/** Node's answer for `text`: { viable, rules } in the CLI's shape. */
function nodeNext(grammar, text) {
  try {
    const state = GBNF(grammar, text)
    return state.viable ? { viable: true, rules: cliShape([...state]) } : { viable: false, rules: [] }
  } catch (error) {
    if (error instanceof InputParseError) return { viable: false, rules: [] }
    throw error
  }
}

function cliNext(file, text) {
  const { json } = cliJson(['next', '--format', 'json', file, '--', text])
  return { viable: json.viable, rules: json.rules }
}

/** Texts at up to `count` evenly spaced character positions of `text` (and all of it). */
function prefixes(text, count) {
  const characters = [...text]
  const step = Math.max(1, Math.ceil(characters.length / count))
  const out = []
  for (let end = 0; end < characters.length; end += step) out.push(characters.slice(0, end).join(''))
  out.push(text)
  return out
}

test('testdata/match: next, forced, match, reject and prefix cases', () => {
  let checked = 0
  for (const { name, grammar, cases } of matchCorpus()) {
    for (const { kind, text, expected } of cases) {
      const where = `${name}: ${kind} ${JSON.stringify(text)}`
      const answer = nodeNext(grammar, text)
      switch (kind) {
        case 'next':
          assert.deepEqual(answer.rules, corpusShape(expected), where)
          break
        case 'forced':
          assert.equal(GBNF(grammar, text).forced(), expected, where)
          assert.equal(grail.forced(grammar, text), expected, where)
          break
        case 'match':
          assert.equal(grail.matches(grammar, text), true, where)
          assert.equal(GBNF(grammar, text).complete, true, where)
          break
        case 'reject':
          assert.equal(answer.viable, false, where)
          assert.equal(grail.viable(grammar, text), false, where)
          break
        case 'prefix':
          assert.equal(answer.viable, true, where)
          assert.equal(grail.matches(grammar, text), false, where)
          break
        default:
          assert.fail(`unknown case kind in ${where}`)
      }
      checked += 1
    }
  }
  assert.ok(checked > 50, `${checked} cases`)
})

test('testdata/match: the same rules as `grail next --format json`', { skip: !cliPath && 'no target/debug/grail (cargo build -p grail-cli)' }, () => {
  let compared = 0
  for (const { name, grammar, cases } of matchCorpus()) {
    const file = grammarFile(name.replace('.match', '.gbnf'), grammar)
    for (const { text } of cases) {
      for (const prefix of prefixes(text, 4)) {
        assert.deepEqual(nodeNext(grammar, prefix), cliNext(file, prefix), `${name}: ${JSON.stringify(prefix)}`)
        compared += 1
      }
    }
  }
  assert.ok(compared > 100, `${compared} texts`)
})

const llamaGrammars = path.join(shared, 'conformance', 'llama.cpp', 'grammars')

test("llama.cpp's example grammars: the CLI's rules along sampled strings", { skip: (!hasShared && 'no ../shared') || (!cliPath && 'no target/debug/grail') }, () => {
  for (const name of fs.readdirSync(llamaGrammars).filter((n) => n.endsWith('.gbnf')).sort()) {
    const file = path.join(llamaGrammars, name)
    const grammar = fs.readFileSync(file, 'utf8')
    const sampled = require('node:child_process').spawnSync(
      cliPath,
      ['sample', '-n', '3', '--seed', '17', '--max-len', '80', file],
      { encoding: 'utf8' }
    )
    assert.equal(sampled.status, 0, sampled.stderr)
    const texts = sampled.stdout.trim().split('\n').map((line) => JSON.parse(line))
    for (const text of texts) {
      for (const prefix of prefixes(text, 8)) {
        assert.deepEqual(nodeNext(grammar, prefix), cliNext(file, prefix), `${name}: ${JSON.stringify(prefix)}`)
      }
      assert.equal(grail.matches(grammar, text), true, `${name}: ${JSON.stringify(text)}`)
    }
  }
})

test("llama.cpp's grammar test cases: pass and fail strings as llama.cpp judges them, rules as the CLI's", { skip: !hasShared && 'no ../shared' }, () => {
  const cases = JSON.parse(
    fs.readFileSync(path.join(shared, 'conformance', 'llama.cpp', 'grammar-cases.json'), 'utf8')
  ).cases
  let strings = 0
  // Cases written in tokens (segments) need a model's vocabulary: left out.
  const textual = cases.filter((item) => [...item.pass, ...item.fail].every((s) => typeof s === 'string'))
  assert.ok(textual.length >= cases.length - 2)
  textual.forEach((item, index) => {
    const file = cliPath && grammarFile(`case-${index}.gbnf`, item.grammar)
    for (const text of item.pass) {
      assert.equal(grail.matches(item.grammar, text), true, `${item.name}: pass ${JSON.stringify(text)}`)
      if (cliPath) assert.deepEqual(nodeNext(item.grammar, text), cliNext(file, text))
      strings += 1
    }
    for (const text of item.fail) {
      assert.equal(grail.matches(item.grammar, text), false, `${item.name}: fail ${JSON.stringify(text)}`)
      if (cliPath) assert.deepEqual(nodeNext(item.grammar, text), cliNext(file, text))
      strings += 1
    }
  })
  assert.ok(strings > 200, `${strings} strings`)
})

test('check() gives the diagnostics of `grail check --format json` (testdata/check)', { skip: !cliPath && 'no target/debug/grail' }, () => {
  const root = path.join(__dirname, '..', '..', '..', 'testdata', 'check')
  let files = 0
  for (const group of ['valid', 'warn', 'invalid']) {
    for (const name of fs.readdirSync(path.join(root, group)).filter((n) => n.endsWith('.gbnf')).sort()) {
      const file = path.join(root, group, name)
      const bytes = fs.readFileSync(file)
      const text = bytes.toString('utf8')
      // Node strings are Unicode: a file that is not UTF-8 cannot be given as one.
      if (!Buffer.from(text, 'utf8').equals(bytes)) continue
      for (const target of ['grail', 'llama.cpp']) {
        const { json } = cliJson(['check', '--format', 'json', '--target', target, file])
        const mine = grail.check(text, { target })
        const shape = mine.diagnostics.map(({ severity, code, message, span, help }) => ({
          severity,
          code,
          message,
          span,
          help,
        }))
        assert.deepEqual({ ok: mine.ok, diagnostics: shape }, json, `${group}/${name} --target ${target}`)
      }
      files += 1
    }
  }
  assert.ok(files > 40, `${files} files`)
})
