// The package from an ES module, as the `gbnf` package is imported: a default export and
// named exports.
import test from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const folder = process.env.GRAIL_GBNF_PACKAGE || path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const module = await import(pathToFileURL(path.join(folder, 'index.js')).href)

test('import GBNF, { RuleType, isRange, Grammar } from "grail-gbnf"', () => {
  const { default: GBNF, RuleType, isRange, Grammar, GrammarParseError, InputParseError } = module
  const state = GBNF('root ::= "yes" | "no"').add('y')
  assert.deepEqual([...state], [{ type: RuleType.CHAR, value: [101] }])
  assert.equal(isRange([1, 2]), true)
  assert.equal(typeof Grammar.fromJsonSchema, 'function')
  assert.equal(typeof GrammarParseError, 'function')
  assert.equal(typeof InputParseError, 'function')
  for (const name of ['GBNF', 'Matcher', 'Vocabulary', 'matches', 'viable', 'forced', 'check', 'validateCall', 'allocateTokenBitmask']) {
    assert.ok(name in module, name)
  }
})
