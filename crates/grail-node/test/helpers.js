// Shared by the tests: the package under test, the repository's paths, the `grail` CLI,
// and next-character rules compared by what they allow.
'use strict'

const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

/** The package: as installed by scripts/node_test.sh (GRAIL_GBNF_PACKAGE), or this folder. */
const grail = require(process.env.GRAIL_GBNF_PACKAGE || path.join(__dirname, '..'))

const repo = path.resolve(__dirname, '..', '..', '..')
const shared = path.resolve(repo, '..', 'shared')
const hasShared = fs.existsSync(shared)

/** The `grail` binary (`cargo build -p grail-cli`), or null. */
const cliPath = (() => {
  const candidate = process.env.GRAIL_CLI || path.join(repo, 'target', 'debug', 'grail')
  return fs.existsSync(candidate) ? candidate : null
})()

/** Runs the CLI with `args`; its stdout parsed as JSON, and its exit status. */
function cliJson(args, input) {
  const result = spawnSync(cliPath, args, { encoding: 'utf8', input, maxBuffer: 1 << 28 })
  if (result.error) throw result.error
  return { json: result.stdout.trim() ? JSON.parse(result.stdout) : null, status: result.status }
}

/** The match corpus: testdata/match/*.match as { name, grammar, cases: [{ kind, text, expected }] }. */
function matchCorpus() {
  const directory = path.join(repo, 'testdata', 'match')
  return fs
    .readdirSync(directory)
    .filter((name) => name.endsWith('.match'))
    .sort()
    .map((name) => {
      const source = fs.readFileSync(path.join(directory, name), 'utf8')
      const split = source.indexOf('\n---\n')
      const grammar = source.slice(0, split + 1)
      const cases = []
      for (const line of source.slice(split + 5).split('\n')) {
        if (line.trim() === '' || line.startsWith('#')) continue
        const space = line.indexOf(' ')
        const kind = line.slice(0, space)
        const values = jsonValues(line.slice(space + 1))
        cases.push({ kind, text: values[0], expected: values[1] })
      }
      return { name, grammar, cases }
    })
}

/** The JSON values written one after another in `text`. */
function jsonValues(text) {
  const values = []
  let rest = text.trim()
  while (rest !== '') {
    // Find the shortest prefix that parses.
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

const MAX = 0x10ffff

/** Sorted, merged, disjoint ranges. */
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

const asRanges = (value) => value.map((item) => (Array.isArray(item) ? item : [item, item]))

/**
 * What rules allow, independent of how they are split: the code points some rule allows
 * (as ranges, surrogates left out) and whether the input may end. The `gbnf` package lists
 * one rule per grammar position; Grail merges them.
 */
function allowed(rules) {
  let ranges = []
  let end = false
  for (const rule of rules) {
    if (rule.type === 'end') end = true
    else if (rule.type === 'char') ranges.push(...asRanges(rule.value))
    else if (rule.type === 'char_exclude') ranges.push(...complement(asRanges(rule.value)))
  }
  // Surrogates are not characters: neither engine can be given one.
  ranges = normalize(ranges).flatMap(([a, b]) => {
    const out = []
    if (a < 0xd800) out.push([a, Math.min(b, 0xd7ff)])
    if (b > 0xdfff) out.push([Math.max(a, 0xe000), b])
    return out
  })
  return { ranges, end }
}

/** Grail's rules in the CLI's JSON shape (`grail next --format json`). */
function cliShape(rules) {
  return rules.map((rule) => {
    switch (rule.type) {
      case 'char':
        return { type: 'CHAR', ranges: asRanges(rule.value) }
      case 'char_exclude':
        return { type: 'CHAR_EXCLUDE', ranges: asRanges(rule.value) }
      case 'token':
        return { type: 'TOKEN', ids: rule.value, negated: rule.negated }
      default:
        return { type: 'END' }
    }
  })
}

/** A .match file's expected rules (bounds may be one-character strings) in the CLI's shape. */
function corpusShape(rules) {
  const bound = (b) => (typeof b === 'string' ? b.codePointAt(0) : b)
  return rules.map((rule) =>
    rule.ranges ? { ...rule, ranges: rule.ranges.map(([a, b]) => [bound(a), bound(b)]) } : rule
  )
}

module.exports = {
  grail,
  repo,
  shared,
  hasShared,
  cliPath,
  cliJson,
  matchCorpus,
  allowed,
  cliShape,
  corpusShape,
}
