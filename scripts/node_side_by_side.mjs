#!/usr/bin/env node
// Grail's Node package (grail-gbnf) against the `gbnf` npm package, side by side:
//
//  1. Which grammars each one reads, and which it answers exactly like llama.cpp:
//     llama.cpp's example grammars and its grammar test cases (../shared/conformance/
//     llama.cpp), and the repository's corpus (testdata/match, testdata/check/{valid,warn}).
//     The truth is llama.cpp's: the test cases' own pass/fail verdicts, the .match files'
//     expectations, and elsewhere Grail's CLI rules (verified exact against llama.cpp; the
//     Node package equals the CLI, crates/grail-node/test).
//  2. The time to compute the next-character rules after each character of a ~10 KB
//     JSON document with llama.cpp's json.gbnf (immutable states: add one character, list
//     the rules), median and p99 per step.
//
//     node scripts/node_side_by_side.mjs [--json results.json] [--budget SECONDS] [--timing-only]
//
// The `gbnf` package (0.1.41) is installed from npm into ~/.cache/grail/node-bench; Grail's
// package is loaded from crates/grail-node, built by `npm install` there (or
// scripts/node_test.sh). target/debug/grail samples strings from the grammars.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const repo = path.resolve(here, '..')
const shared = path.resolve(repo, '..', 'shared')
const args = process.argv.slice(2)
const option = (name, fallback) => {
  const index = args.indexOf(name)
  return index >= 0 ? args[index + 1] : fallback
}
const jsonOut = option('--json', null)
const budgetSeconds = Number(option('--budget', '120'))

// ------------------------------------------------------------------ the two packages

const cache = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'grail', 'node-bench')
fs.mkdirSync(cache, { recursive: true })
if (!fs.existsSync(path.join(cache, 'node_modules', 'gbnf', 'package.json'))) {
  if (!fs.existsSync(path.join(cache, 'package.json'))) {
    fs.writeFileSync(path.join(cache, 'package.json'), '{"name": "grail-node-bench", "private": true}\n')
  }
  console.log(`npm install gbnf@0.1.41 (into ${cache})`)
  const installed = spawnSync('npm', ['install', '--no-audit', '--no-fund', 'gbnf@0.1.41'], {
    cwd: cache,
    stdio: 'inherit',
  })
  if (installed.status !== 0) {
    console.log('skipped: the side-by-side: gbnf@0.1.41 could not be installed from npm')
    process.exit(0)
  }
}
const gbnfRoot = path.join(cache, 'node_modules', 'gbnf')
const gbnfVersion = JSON.parse(fs.readFileSync(path.join(gbnfRoot, 'package.json'), 'utf8')).version
const { default: GBNF } = await import(path.join(gbnfRoot, 'dist', 'index.js'))
const grail = createRequire(import.meta.url)(path.join(repo, 'crates', 'grail-node'))

const cli = path.join(repo, 'target', 'debug', 'grail')
if (!fs.existsSync(cli)) {
  console.error('error: target/debug/grail is missing (cargo build -p grail-cli)')
  process.exit(1)
}
if (!fs.existsSync(shared)) {
  console.error('error: ../shared is missing (llama.cpp grammars and test cases)')
  process.exit(1)
}

// -------------------------------------------------------------------- comparing rules

const MAX = 0x10ffff
const asRanges = (value) => value.map((item) => (Array.isArray(item) ? item : [item, item]))
function normalize(ranges) {
  const sorted = ranges.map(([a, b]) => [a, b]).sort((x, y) => x[0] - y[0])
  const merged = []
  for (const [a, b] of sorted) {
    const last = merged[merged.length - 1]
    if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b)
    else merged.push([a, b])
  }
  return merged
}
function complement(ranges) {
  const out = []
  let next = 0
  for (const [a, b] of normalize(ranges)) {
    if (a > next) out.push([next, a - 1])
    next = b + 1
  }
  if (next <= MAX) out.push([next, MAX])
  return out
}
/** What rules allow (code points, surrogates left out) and whether input may end. */
function allowedKey(rules) {
  let ranges = []
  let end = false
  for (const rule of rules) {
    const type = String(rule.type).toLowerCase()
    if (type === 'end') end = true
    else if (type === 'char') ranges.push(...asRanges(rule.value))
    else if (type === 'char_exclude') ranges.push(...complement(asRanges(rule.value)))
  }
  ranges = normalize(ranges).flatMap(([a, b]) => {
    const out = []
    if (a < 0xd800) out.push([a, Math.min(b, 0xd7ff)])
    if (b > 0xdfff) out.push([Math.max(a, 0xe000), b])
    return out
  })
  return JSON.stringify({ ranges, end })
}

/** Runs `f`, turning any exception (stack overflows included) into `{ error }`. */
function attempt(f) {
  try {
    return { value: f() }
  } catch (error) {
    return { error: `${error?.name ?? 'Error'}: ${String(error?.message ?? error).split('\n')[0]}` }
  }
}

/**
 * Walks `text` one character at a time in both packages, comparing what they allow at
 * every step (Grail's answers are the truth). Returns null when all agree, otherwise the
 * first difference.
 */
function walk(grammar, text) {
  let expected = grail.GBNF(grammar)
  const mine = attempt(() => GBNF(grammar))
  if (mine.error) return { at: 0, why: mine.error }
  let theirs = mine.value
  const characters = [...text]
  for (let index = 0; ; index++) {
    const wanted = allowedKey([...expected])
    const got = attempt(() => allowedKey([...theirs]))
    if (got.error) return { at: index, why: got.error }
    if (got.value !== wanted) return { at: index, why: `rules differ: ${got.value.slice(0, 120)} vs ${wanted.slice(0, 120)}` }
    if (index === characters.length) return null
    const character = characters[index]
    expected = expected.add(character)
    const next = attempt(() => theirs.add(character))
    if (next.error) return { at: index, why: next.error }
    theirs = next.value
  }
}

function sample(file, count, maxLength) {
  const result = spawnSync(cli, ['sample', '-n', String(count), '--seed', '7', '--max-len', String(maxLength), file], {
    encoding: 'utf8',
  })
  if (result.status !== 0) return []
  return result.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line))
}

// ----------------------------------------------------------------------- the corpora

/** A grammar file judged along sampled strings: read, and exact at every step. */
function judgeSampled(name, file) {
  const grammar = fs.readFileSync(file, 'utf8')
  const refusal = attempt(() => grail.GBNF(grammar)).error
  const reads = { grail: !refusal, gbnf: !attempt(() => GBNF(grammar)).error }
  if (!reads.grail) return { name, reads, exact: { grail: false, gbnf: false }, note: `Grail refuses it: ${refusal}` }
  const texts = sample(file, 4, 120)
  let difference = null
  if (reads.gbnf) {
    for (const text of texts) {
      difference = walk(grammar, text)
      if (difference) {
        difference.text = text
        break
      }
    }
  }
  return {
    name,
    reads,
    exact: { grail: true, gbnf: reads.gbnf && !difference },
    strings: texts.length,
    difference,
  }
}

/** A .match file: every case as the file expects (next rules compared by what they allow). */
function judgeMatchFile(name, source) {
  const split = source.indexOf('\n---\n')
  const grammar = source.slice(0, split + 1)
  const cases = []
  for (const line of source.slice(split + 5).split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue
    const space = line.indexOf(' ')
    cases.push({ kind: line.slice(0, space), values: jsonValues(line.slice(space + 1)) })
  }
  const reads = { grail: !attempt(() => grail.GBNF(grammar)).error, gbnf: !attempt(() => GBNF(grammar)).error }
  const verdict = (engine) => {
    if (!reads[engine === GBNF ? 'gbnf' : 'grail']) return false
    for (const { kind, values } of cases) {
      const [text, expected] = values
      const state = attempt(() => engine(grammar, text))
      const complete = !state.error && allowedKey([...state.value]).endsWith('"end":true}')
      const viable = !state.error && [...state.value].length > 0
      switch (kind) {
        case 'match':
          if (!complete) return false
          break
        case 'reject':
          if (viable) return false
          break
        case 'prefix':
          if (!viable || complete) return false
          break
        case 'next': {
          if (state.error) return false
          const rules = expected.map((rule) => ({
            type: rule.type,
            value: (rule.ranges ?? []).map(([a, b]) => [cp(a), cp(b)]),
          }))
          if (allowedKey([...state.value]) !== allowedKey(rules)) return false
          break
        }
        default:
          break // `forced`: the gbnf package has no such question
      }
    }
    return true
  }
  return { name, reads, exact: { grail: verdict(grail.GBNF), gbnf: verdict(GBNF) }, cases: cases.length }
}
const cp = (bound) => (typeof bound === 'string' ? bound.codePointAt(0) : bound)
function jsonValues(text) {
  const values = []
  let rest = text.trim()
  while (rest !== '') {
    let end = 1
    for (;;) {
      try {
        values.push(JSON.parse(rest.slice(0, end)))
        break
      } catch {
        end += 1
        if (end > rest.length) throw new Error(`bad JSON values: ${text}`)
      }
    }
    rest = rest.slice(end).trim()
  }
  return values
}

/** A llama.cpp test case: its pass strings match completely, its fail strings do not. */
function judgeCase(item) {
  const reads = { grail: !attempt(() => grail.GBNF(item.grammar)).error, gbnf: !attempt(() => GBNF(item.grammar)).error }
  const verdict = (engine, key) => {
    if (!reads[key]) return false
    const complete = (text) => {
      const state = attempt(() => engine(item.grammar, text))
      return !state.error && [...state.value].some((rule) => String(rule.type).toLowerCase() === 'end')
    }
    return item.pass.every(complete) && !item.fail.some(complete)
  }
  return { name: item.name, reads, exact: { grail: verdict(grail.GBNF, 'grail'), gbnf: verdict(GBNF, 'gbnf') } }
}

function summarize(label, results) {
  const count = (f) => results.filter(f).length
  const row = {
    corpus: label,
    grammars: results.length,
    grail_reads: count((r) => r.reads.grail),
    gbnf_reads: count((r) => r.reads.gbnf),
    grail_exact: count((r) => r.exact.grail),
    gbnf_exact: count((r) => r.exact.gbnf),
    gbnf_exact_of_read: `${count((r) => r.exact.gbnf)}/${count((r) => r.reads.gbnf)}`,
  }
  console.log(
    `${label.padEnd(36)} ${String(row.grammars).padStart(4)}   reads: Grail ${row.grail_reads}, gbnf ${row.gbnf_reads}` +
      `   exact: Grail ${row.grail_exact}, gbnf ${row.gbnf_exact} (of the ${row.gbnf_reads} it reads: ${row.gbnf_exact_of_read})`
  )
  for (const r of results) {
    if (r.reads.gbnf && !r.exact.gbnf) {
      console.log(`    gbnf inexact: ${r.name}${r.difference ? ` (at ${r.difference.at}: ${r.difference.why.slice(0, 140)})` : ''}`)
    }
    if (!r.exact.grail) console.log(`    Grail: ${r.name}: ${r.note ?? r.difference?.why ?? 'inexact'}`)
  }
  return row
}

// Each grammar is judged in a child process (with a memory cap and a time limit): the
// gbnf package runs out of memory or time on some.
const llamaDir = path.join(shared, 'conformance', 'llama.cpp', 'grammars')
const matchDir = path.join(repo, 'testdata', 'match')

function judge(item) {
  switch (item.kind) {
    case 'sampled':
      return judgeSampled(item.name, item.file)
    case 'case':
      return judgeCase(item.case)
    default:
      return judgeMatchFile(item.name, fs.readFileSync(item.file, 'utf8'))
  }
}

const childIndex = args.indexOf('--one')
if (childIndex >= 0) {
  const item = JSON.parse(args[childIndex + 1])
  process.stdout.write(`${JSON.stringify({ result: judge(item) })}\n`)
  process.exit(0)
}

const TIME_LIMIT_MS = 90_000
function judgeInChild(item) {
  const child = spawnSync(
    process.execPath,
    ['--max-old-space-size=2048', '--stack-size=984', fileURLToPath(import.meta.url), '--one', JSON.stringify(item)],
    { encoding: 'utf8', timeout: TIME_LIMIT_MS, maxBuffer: 1 << 26 }
  )
  const line = child.stdout?.split('\n').find((l) => l.startsWith('{"result"'))
  if (line) return JSON.parse(line).result
  // The child died: the gbnf package ran out of memory or time. Grail's side again, here.
  const why = child.error?.code === 'ETIMEDOUT' ? `over ${TIME_LIMIT_MS / 1000} s` : 'out of memory or crashed'
  let grammar = item.kind === 'case' ? item.case.grammar : fs.readFileSync(item.file, 'utf8')
  if (item.kind === 'match') grammar = grammar.slice(0, grammar.indexOf('\n---\n') + 1)
  const reads = { grail: !attempt(() => grail.GBNF(grammar)).error, gbnf: !attempt(() => GBNF(grammar)).error }
  return { name: item.name, reads, exact: { grail: reads.grail, gbnf: false }, difference: { at: 0, why: `gbnf: ${why}` } }
}

console.log(`gbnf ${gbnfVersion} against grail-gbnf ${grail.version} (Node ${process.version})\n`)
const rows = []
const details = {}
const timingOnly = args.includes('--timing-only')
const cases = JSON.parse(fs.readFileSync(path.join(shared, 'conformance', 'llama.cpp', 'grammar-cases.json'), 'utf8'))
if (!timingOnly) {

details.llama_examples = fs
  .readdirSync(llamaDir)
  .filter((name) => name.endsWith('.gbnf'))
  .sort()
  .map((name) => judgeInChild({ kind: 'sampled', name, file: path.join(llamaDir, name) }))
rows.push(summarize("llama.cpp's example grammars", details.llama_examples))

details.llama_cases = cases.cases
  .filter((item) => [...item.pass, ...item.fail].every((s) => typeof s === 'string'))
  .map((item) => judgeInChild({ kind: 'case', name: item.name, case: item }))
rows.push(summarize("llama.cpp's grammar test cases", details.llama_cases))

details.match = fs
  .readdirSync(matchDir)
  .filter((name) => name.endsWith('.match'))
  .sort()
  .map((name) => judgeInChild({ kind: 'match', name, file: path.join(matchDir, name) }))
rows.push(summarize('testdata/match', details.match))

details.check = []
for (const group of ['valid', 'warn']) {
  const directory = path.join(repo, 'testdata', 'check', group)
  for (const name of fs.readdirSync(directory).filter((n) => n.endsWith('.gbnf')).sort()) {
    details.check.push(judgeInChild({ kind: 'sampled', name: `${group}/${name}`, file: path.join(directory, name) }))
  }
}
rows.push(summarize('testdata/check (valid, warn)', details.check))

const all = [...details.llama_examples, ...details.llama_cases, ...details.match, ...details.check]
const gbnfThrows = all.filter((r) => r.reads.grail && !r.reads.gbnf)
const gbnfWrong = all.filter((r) => r.reads.gbnf && !r.exact.gbnf)
console.log(
  `\nall: ${all.length} grammars; Grail reads ${all.filter((r) => r.reads.grail).length}, exact on ${all.filter((r) => r.exact.grail).length}; ` +
    `gbnf reads ${all.filter((r) => r.reads.gbnf).length}, exact on ${all.filter((r) => r.exact.gbnf).length}`
)
console.log(
  `where gbnf throws (${gbnfThrows.length}) or answers wrong (${gbnfWrong.length}): Grail exact on ` +
    `${[...gbnfThrows, ...gbnfWrong].filter((r) => r.exact.grail).length}`
)

// Error positions: the invalid grammars of testdata/check and llama.cpp's parser
// rejections; where both packages throw with a position, is it the same string index?
{
  const invalid = []
  const directory = path.join(repo, 'testdata', 'check', 'invalid')
  for (const name of fs.readdirSync(directory).filter((n) => n.endsWith('.gbnf')).sort()) {
    invalid.push([name, fs.readFileSync(path.join(directory, name), 'utf8')])
  }
  cases.parser_rejects.forEach((item, index) => invalid.push([`parser_rejects[${index}]`, item.grammar]))
  const position = (f) => {
    try {
      f()
      return 'reads it'
    } catch (error) {
      return typeof error?.pos === 'number' ? error.pos : `throws ${error?.name ?? 'an error'} without a position`
    }
  }
  let both = 0
  let same = 0
  const differing = []
  for (const [name, text] of invalid) {
    const ours = position(() => grail.GBNF(text, '', { target: 'llama.cpp' }))
    const theirs = position(() => GBNF(text))
    if (typeof ours === 'number' && typeof theirs === 'number') {
      both += 1
      if (ours === theirs) same += 1
      else differing.push(`${name}: gbnf ${theirs}, Grail ${ours}`)
    } else if (typeof ours !== 'number' || typeof theirs !== 'number') {
      differing.push(`${name}: gbnf ${theirs}, Grail ${ours}`)
    }
  }
  console.log(`\ngrammar error positions (${invalid.length} grammars llama.cpp refuses): both give one on ${both}, the same on ${same}`)
  for (const line of differing) console.log(`    ${line}`)
  details.error_positions = { grammars: invalid.length, both, same, differing }
}
}

// ------------------------------------------------------------------- per-step timing

/** A deterministic JSON document of about `size` bytes that llama.cpp's json.gbnf reads. */
function jsonDocument(size) {
  let seed = 12345
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed / 2147483648
  }
  const words = ['alpha', 'beta', 'gamma', 'delta', 'grammar', 'token', 'mask', 'llama', 'état', 'naïve', 'ß', 'quote "x"', 'tab\\t']
  const word = () => words[Math.floor(random() * words.length)]
  const value = (depth) => {
    const pick = random()
    if (depth > 3 || pick < 0.35) return word()
    if (pick < 0.55) return Math.floor(random() * 100000) / (random() < 0.5 ? 1 : 100)
    if (pick < 0.62) return random() < 0.5
    if (pick < 0.65) return null
    if (pick < 0.8) return Array.from({ length: 1 + Math.floor(random() * 4) }, () => value(depth + 1))
    const object = {}
    for (let i = 0; i < 1 + Math.floor(random() * 4); i++) object[`${word()}_${i}`] = value(depth + 1)
    return object
  }
  const document = { items: [] }
  while (JSON.stringify(document, null, 2).length < size) {
    document.items.push({ id: document.items.length, name: word(), value: value(1) })
  }
  return JSON.stringify(document, null, 2)
}

/** llama.cpp's json.gbnf written without what the gbnf package cannot read. */
function jsonGbnfReadable() {
  const optional = (item, n) => (n === 1 ? `(${item})?` : `(${item} ${optional(item, n - 1)})?`)
  return [
    'root ::= object',
    'value ::= object | array | string | number | ("true" | "false" | "null") ws',
    'object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws',
    'array ::= "[" ws ( value ("," ws value)* )? "]" ws',
    'string ::= "\\"" ( [^"\\\\\\x7F\\x00-\\x1F] | "\\\\" (["\\\\bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F]) )* "\\"" ws',
    `number ::= ("-"? ([0-9] | [1-9] ${optional('[0-9]', 15)})) ("." [0-9]+)? ([eE] [-+]? [0-9] ${optional('[1-9]', 15)})? ws`,
    `ws ::= (" " | "\\n" ${optional('[ \\t]', 20)})?`,
    '',
  ].join('\n')
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

/** Per-step times (ns) of adding each character and listing the rules, within a budget. */
function timeSteps(start, text, budgetMs) {
  const times = []
  let state = start
  let rules = 0
  const began = performance.now()
  for (const character of text) {
    const t0 = process.hrtime.bigint()
    state = state.add(character)
    rules += [...state].length
    times.push(Number(process.hrtime.bigint() - t0))
    if (performance.now() - began > budgetMs) break
  }
  return { times, rules, seconds: (performance.now() - began) / 1000 }
}

const jsonGrammar = fs.readFileSync(path.join(llamaDir, 'json.gbnf'), 'utf8')
const readable = jsonGbnfReadable()
const document = jsonDocument(10 * 1024)
console.log(`\nper-step timing: ${document.length} characters of JSON, json.gbnf (gbnf: the same grammar written without {m,n} and the leading empty alternative)`)
// The rewrite is the same language: Grail answers the same on both at every step, and
// the gbnf package agrees with Grail on it.
{
  let original = grail.GBNF(jsonGrammar)
  let rewritten = grail.GBNF(readable)
  for (const character of document) {
    if (allowedKey([...original]) !== allowedKey([...rewritten])) throw new Error('the rewrite of json.gbnf differs')
    original = original.add(character)
    rewritten = rewritten.add(character)
  }
  if (!original.complete) throw new Error('the document does not match json.gbnf')
  const first = document.slice(0, 1500)
  const difference = walk(readable, first)
  console.log(`  gbnf agrees with Grail along the first ${first.length} characters: ${difference ? `no (${JSON.stringify(difference)})` : 'yes'}`)
}

// Each package is timed twice: on the first use of the grammar (a comment makes its text
// new: Grail compiles it and starts its caches afresh), and warm, after a run over the
// first 300 characters with the same grammar (Grail keeps a compiled grammar, the
// engine's step cache and the rule lists met per grammar text).
const timings = {}
let coldRun = 0
for (const [label, grammarText, engine] of [
  ['grail-gbnf (json.gbnf)', jsonGrammar, (text) => grail.GBNF(text)],
  ['grail-gbnf (rewrite)', readable, (text) => grail.GBNF(text)],
  [`gbnf ${gbnfVersion} (rewrite)`, readable, (text) => GBNF(text)],
]) {
  for (const phase of ['cold', 'warm']) {
    let text = grammarText
    if (phase === 'cold') {
      coldRun += 1
      text = `${grammarText}\n# first use ${coldRun}\n`
    } else {
      timeSteps(engine(text), document.slice(0, 300), budgetSeconds * 1000)
    }
    const began = performance.now()
    const start = engine(text)
    const compileMs = performance.now() - began
    const { times, seconds } = timeSteps(start, document, budgetSeconds * 1000)
    const sorted = [...times].sort((a, b) => a - b)
    const key = `${label} ${phase}`
    timings[key] = {
      steps: times.length,
      of: [...document].length,
      grammar_ms: compileMs,
      median_us: percentile(sorted, 50) / 1000,
      p99_us: percentile(sorted, 99) / 1000,
      mean_us: times.reduce((x, y) => x + y, 0) / times.length / 1000,
      seconds,
    }
    const t = timings[key]
    console.log(
      `  ${key.padEnd(33)} ${String(t.steps).padStart(6)}/${t.of} steps  grammar ${t.grammar_ms.toFixed(2)} ms  median ${t.median_us.toFixed(2)} µs  p99 ${t.p99_us.toFixed(2)} µs  mean ${t.mean_us.toFixed(2)} µs`
    )
  }
}
const ratio = {}
for (const phase of ['cold', 'warm']) {
  const ours = timings[`grail-gbnf (json.gbnf) ${phase}`]
  const theirs = timings[`gbnf ${gbnfVersion} (rewrite) ${phase}`]
  ratio[phase] = { median: theirs.median_us / ours.median_us, p99: theirs.p99_us / ours.p99_us, mean: theirs.mean_us / ours.mean_us }
  const r = ratio[phase]
  console.log(`  gbnf / Grail per step, ${phase}: median ${r.median.toFixed(1)}x, p99 ${r.p99.toFixed(1)}x, mean ${r.mean.toFixed(1)}x`)
}

if (jsonOut) {
  fs.writeFileSync(
    jsonOut,
    `${JSON.stringify({ gbnf: gbnfVersion, grail: grail.version, node: process.version, machine: `${os.cpus().length} cores`, rows, timings, ratio, details }, null, 1)}\n`
  )
  console.log(`\nwrote ${jsonOut}`)
}
