// Every example of the `gbnf` package's documentation (its README and its site's pages on
// iteration, validation and getting started, version 0.1.41), through Grail: the same
// rules as that package gives (recorded below from gbnf@0.1.41), compared by what they
// allow (that package lists one rule per grammar position, Grail merges them), and the
// same errors at the same positions.
'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
const { grail, allowed } = require('./helpers.js')

const GBNF = grail
const { RuleType, isRange, GrammarParseError, InputParseError } = grail

const CHAR = 'char'
const EXCLUDE = 'char_exclude'
const END = 'end'
const c = (text) => text.codePointAt(0)

/** Grail's rules allow exactly what the `gbnf` package's rules allow. */
function sameRules(state, gbnfRules) {
  const rules = [...state]
  assert.deepEqual(allowed(rules), allowed(gbnfRules), JSON.stringify(rules))
  return rules
}

test('the imports: a default export that is GBNF, RuleType and isRange', () => {
  assert.equal(typeof GBNF, 'function')
  assert.equal(grail.default, GBNF)
  assert.equal(grail.GBNF, GBNF)
  assert.equal(RuleType.CHAR, 'char')
  assert.equal(RuleType.CHAR_EXCLUDE, 'char_exclude')
  assert.equal(RuleType.END, 'end')
  assert.equal(isRange([97, 122]), true)
  assert.equal(isRange(97), false)
  assert.equal(isRange(undefined), false)
})

test('README: root ::= "yes" | "no" starts with y or n', () => {
  const state = GBNF(`
root  ::= "yes" | "no"
`)
  const rules = sameRules(state, [
    { type: CHAR, value: [121] },
    { type: CHAR, value: [110] },
  ])
  // One merged rule: both code points, sorted.
  assert.deepEqual(rules, [{ type: RuleType.CHAR, value: [c('n'), c('y')] }])
  assert.deepEqual([...state.rules()], rules)
  assert.equal(state.size, 1)
})

test('README: states are immutable; add moves on', () => {
  let state = GBNF(`
root  ::= "I like green eggs and ham"
`)
  assert.deepEqual([...state], [{ type: CHAR, value: [c('I')] }])
  state = state.add('I li')
  assert.deepEqual([...state], [{ type: CHAR, value: [c('k')] }])
  state = state.add('ke gree')
  assert.deepEqual([...state], [{ type: CHAR, value: [c('n')] }])
})

test('Iteration: foo | bar | baz, then ba (calling the state is add)', () => {
  const grammar = GBNF(`root ::= "foo" | "bar" | "baz"`)
  sameRules(grammar, [
    { type: CHAR, value: [102] },
    { type: CHAR, value: [98] },
  ])
  let state = GBNF(`root ::= "foo" | "bar" | "baz"`)
  state = state('ba')
  const rules = sameRules(state, [
    { type: CHAR, value: [114] },
    { type: CHAR, value: [122] },
  ])
  assert.deepEqual(rules, [{ type: CHAR, value: [c('r'), c('z')] }])
  assert.deepEqual([...GBNF(`root ::= "foo" | "bar" | "baz"`).add('ba')], rules)
})

test('Iteration: an invalid string throws with its position', () => {
  const state = GBNF(`root ::= "foo" | "bar" | "baz"`)
  assert.throws(
    () => state('baf'),
    (error) => {
      assert.ok(error instanceof InputParseError)
      assert.equal(error.name, 'InputParseError')
      assert.equal(error.pos, 2)
      assert.equal(error.mostRecentInput, 'baf')
      assert.equal(error.src, 'baf')
      assert.match(error.expected, /"r"|\[rz\]/)
      return true
    }
  )
})

test('Rule types: CHAR from a literal and from a range', () => {
  sameRules(GBNF(`root ::= "foo"`), [{ type: CHAR, value: [102] }])
  const rules = sameRules(GBNF(`root ::= [a-z]`), [{ type: CHAR, value: [[97, 122]] }])
  assert.deepEqual(rules, [{ type: CHAR, value: [[97, 122]] }])
  assert.ok(isRange(rules[0].value[0]))
})

test('Rule types: CHAR_EXCLUDE from a negated class', () => {
  // The page writes `^[a-f]`, which neither llama.cpp nor the package reads (both refuse
  // it at the `^`, index 9); the class it means is `[^a-f]`.
  assert.throws(
    () => GBNF(`root ::= ^[a-f]`),
    (error) => error instanceof GrammarParseError && error.pos === 9
  )
  const rules = sameRules(GBNF(`root ::= [^a-f]`), [{ type: EXCLUDE, value: [[97, 102]] }])
  assert.deepEqual(rules, [{ type: EXCLUDE, value: [[97, 102]] }])
})

test('Rule types: both CHAR and CHAR_EXCLUDE after "ba"', () => {
  // Written `("ba" ^r)` on the page (refused by both at index 25); meant `[^r]`.
  assert.throws(
    () => GBNF(`root ::= ("bar") | ("ba" ^r)`, 'ba'),
    (error) => error instanceof GrammarParseError && error.pos === 25
  )
  const state = GBNF(`root ::= ("bar") | ("ba" [^r])`, 'ba')
  // The package lists "r" and "anything but r"; Grail merges them: any character.
  const rules = sameRules(state, [
    { type: CHAR, value: [114] },
    { type: EXCLUDE, value: [114] },
  ])
  assert.deepEqual(rules, [{ type: EXCLUDE, value: [] }])
})

test('Rule types: END after a complete match', () => {
  const grammar = GBNF(`root ::= "foo"`, 'foo')
  assert.deepEqual([...grammar], [{ type: END }])
  assert.equal(grammar.complete, true)
})

test('Rule types: END beside a comma rule', () => {
  // The page's grammar names a rule `any_character`: llama.cpp reads no `_` in names,
  // and the package refuses it too (at the `_`, index 56; Grail at the name, index 53).
  const source = `
# a list of characters separated by commas
root ::= any_character ("," any_character)*
any_character ::= [a-z]
`
  assert.throws(
    () => GBNF(source),
    (error) => error instanceof GrammarParseError && error.pos === 53 &&
      error.diagnostics[0].code === 'rule-name-underscore'
  )
  const grammar = GBNF(source.replaceAll('any_character', 'any-character'))
  const rules = sameRules(grammar.add('a,b,c'), [{ type: CHAR, value: [44] }, { type: END }])
  assert.deepEqual(rules, [{ type: CHAR, value: [c(',')] }, { type: END }])
})

test('Validation: a valid grammar passes; `:=` throws at index 5', () => {
  GBNF('root ::= "foo"')
  assert.throws(
    () => GBNF('root := "foo"'),
    (error) => {
      assert.ok(error instanceof GrammarParseError)
      assert.equal(error.name, 'GrammarParseError')
      assert.equal(error.pos, 5)
      assert.equal(error.grammar, 'root := "foo"')
      assert.equal(typeof error.reason, 'string')
      // Grail's diagnostics ride along.
      assert.ok(error.diagnostics.length >= 1)
      const [first] = error.diagnostics
      assert.equal(first.severity, 'error')
      assert.equal(first.line, 1)
      assert.equal(first.column, 6)
      assert.equal(first.span.start, 5)
      assert.equal(typeof first.code, 'string')
      return true
    }
  )
})

test('Validation: input', () => {
  const grammar = GBNF('root ::= "foo"')
  assert.deepEqual([...grammar.add('foo')], [{ type: END }])
  // `grammar` is unchanged by that add: "bar" is refused at its first character.
  assert.throws(
    () => grammar.add('bar'),
    (error) => error instanceof InputParseError && error.pos === 0
  )
  assert.throws(
    () => GBNF(`root ::= "foo" | "bar"`, 'baz'),
    (error) => error instanceof InputParseError && error.pos === 2 && error.previousInput === ''
  )
  let state = GBNF(`root ::= "foo" | "bar"`)
  state = state.add('b')
  state = state.add('a')
  assert.throws(
    () => state.add('z'),
    (error) => {
      assert.ok(error instanceof InputParseError)
      assert.equal(error.pos, 0)
      assert.equal(error.previousInput, 'ba')
      assert.equal(error.src, 'baz')
      assert.equal(error.line, 1)
      assert.equal(error.column, 3)
      assert.match(error.message, /line 1, column 3/)
      assert.match(error.errorForMostRecentInput, /index 0/)
      assert.equal(typeof error.messageExpanded, 'string')
      return true
    }
  )
})

test('Getting started: rules before and after "b"', () => {
  let grammar = GBNF('root ::= "foo" | "bar" | "baz"')
  sameRules(grammar, [
    { type: CHAR, value: [102] },
    { type: CHAR, value: [98] },
  ])
  grammar = grammar.add('b')
  assert.deepEqual([...grammar], [{ type: CHAR, value: [97] }])
})

test('input as code points, as the package takes it', () => {
  const state = GBNF('root ::= "foo" | "bar" | "baz"', [c('b'), c('a')])
  assert.deepEqual([...state], [{ type: CHAR, value: [c('r'), c('z')] }])
  assert.deepEqual([...state.add(c('r'))], [{ type: END }])
})
