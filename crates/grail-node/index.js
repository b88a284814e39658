// grail-gbnf: GBNF grammars exactly as llama.cpp reads them, at native speed.
//
// A thin layer over the native addon (src/, napi-rs): the `gbnf` package's API (`GBNF()`,
// immutable callable states, `RuleType`, `isRange`, its error classes), the error classes
// that carry Grail's diagnostics, and small helpers. Everything that matches, checks or
// masks is in Rust; this file only shapes values and throws.
'use strict'

const fs = require('node:fs')
const path = require('node:path')

function loadNative() {
  const override = process.env.GRAIL_GBNF_NATIVE
  if (override) {
    return require(path.resolve(override))
  }
  const prefix = `grail-gbnf.${process.platform}-${process.arch}`
  const built = fs
    .readdirSync(__dirname)
    .filter((name) => name.startsWith(prefix) && name.endsWith('.node'))
    .sort()
  if (built.length === 0) {
    throw new Error(
      `grail-gbnf: no native addon for ${process.platform}-${process.arch} in ${__dirname}; ` +
        'build it with `npm install` there (it runs build.js, which needs cargo)'
    )
  }
  return require(path.join(__dirname, built[0]))
}

const native = loadNative()
const { Grammar, Matcher, Vocabulary } = native

// ---------------------------------------------------------------------------- errors

/** Lines of `source` around string index `index` with a caret under it. */
function excerpt(source, index) {
  const before = source.slice(0, index)
  const lineStart = before.lastIndexOf('\n') + 1
  let lineEnd = source.indexOf('\n', index)
  if (lineEnd < 0) lineEnd = source.length
  const lines = source.slice(0, lineEnd).split('\n')
  const shown = lines.slice(Math.max(0, lines.length - 3))
  const column = [...source.slice(lineStart, index)].length
  return [...shown, `${' '.repeat(column)}^`].join('\n')
}

/** 1-based line and column (in characters) of string index `index` of `source`. */
function lineColumn(source, index) {
  const before = source.slice(0, index)
  const line = before.split('\n').length
  const column = [...before.slice(before.lastIndexOf('\n') + 1)].length + 1
  return { line, column }
}

/** The base class of Grail's errors; `diagnostics` says where and why. */
class GrailError extends Error {
  constructor(message, diagnostics = []) {
    super(message)
    this.name = 'GrailError'
    this.diagnostics = diagnostics
  }
}

/**
 * A grammar that does not parse or check. As the `gbnf` package's error of that name:
 * `grammar`, `pos` (the string index of the first error) and `reason`; and Grail's
 * `diagnostics` (code, message, line, column, span, help), one per error.
 */
class GrammarParseError extends GrailError {
  constructor(grammar, pos, reason, diagnostics = [], summary = reason) {
    super(`invalid grammar: ${summary}\n\n${excerpt(grammar, pos)}`, diagnostics)
    this.name = 'GrammarParseError'
    this.grammar = grammar
    this.pos = pos
    this.reason = reason
  }
}

/**
 * Input the grammar does not allow. As the `gbnf` package's error of that name:
 * `mostRecentInput` (the text given to that `add`), `pos` (the string index in it of the
 * first character refused), `previousInput` (the text before it), `src`; and
 * `expected`, what could have come there.
 */
class InputParseError extends GrailError {
  constructor(mostRecentInput, pos, previousInput = '', expected = '') {
    const recent = inputText(mostRecentInput)
    const previous = inputText(previousInput)
    const whole = previous + recent
    const at = previous.length + pos
    const { line, column } = lineColumn(whole, at)
    super(
      `the input does not match the grammar at line ${line}, column ${column}` +
        `${expected ? `: ${expected}` : ''}\n\n${excerpt(whole, at)}`
    )
    this.name = 'InputParseError'
    this.mostRecentInput = mostRecentInput
    this.pos = pos
    this.previousInput = previousInput
    this.expected = expected
    this.line = line
    this.column = column
  }

  /** All the input so far, the refused text included. */
  get src() {
    return inputText(this.previousInput) + inputText(this.mostRecentInput)
  }

  /** The message with only the most recent input shown. */
  get errorForMostRecentInput() {
    const recent = inputText(this.mostRecentInput)
    return `the input does not match the grammar at index ${this.pos} of the text added` +
      `${this.expected ? `: ${this.expected}` : ''}\n\n${excerpt(recent, this.pos)}`
  }

  /** The message (it shows all the input so far). */
  get messageExpanded() {
    return this.message
  }
}

/** A JSON Schema Grail refuses; `diagnostics` name the JSON pointer and keyword. */
class SchemaError extends GrailError {
  constructor(message, diagnostics = []) {
    super(message, diagnostics)
    this.name = 'SchemaError'
  }
}

/** A tool registry Grail refuses; `diagnostics` name the tool, pointer and keyword. */
class ToolsError extends GrailError {
  constructor(message, diagnostics = []) {
    super(message, diagnostics)
    this.name = 'ToolsError'
  }
}

/** The exception for a failure the addon returned as data. */
function thrown(failure, source) {
  switch (failure.kind) {
    case 'grammar':
      return new GrammarParseError(
        source,
        failure.pos ?? 0,
        failure.reason,
        failure.diagnostics,
        failure.message
      )
    case 'schema':
      return new SchemaError(failure.message, failure.diagnostics)
    default:
      return new ToolsError(failure.message, failure.diagnostics)
  }
}

function isFailure(value) {
  return value !== null && typeof value === 'object' && Array.isArray(value.diagnostics) &&
    typeof value.kind === 'string'
}

// -------------------------------------------------------------------------- grammars

function jsonText(value) {
  return typeof value === 'string' ? value : JSON.stringify(value)
}

/** A grammar from GBNF text; throws `GrammarParseError` with Grail's diagnostics. */
Grammar.fromGbnf = function fromGbnf(text, options = {}) {
  const source = String(text)
  const result = native.compileGbnf(source, { root: options.root, target: options.target },
    options.vocabulary)
  if (isFailure(result)) throw thrown(result, source)
  return result
}

/** The grammar of the JSON values a JSON Schema (an object or JSON text) validates. */
Grammar.fromJsonSchema = function fromJsonSchema(schema, options = {}) {
  const result = native.compileJsonSchema(jsonText(schema), options)
  if (isFailure(result)) throw thrown(result)
  return result
}

/** The tool-call grammar of a tool registry (an OpenAI `tools` list, functions, MCP). */
Grammar.fromTools = function fromTools(tools, options = {}) {
  const result = native.compileTools(jsonText(tools), options)
  if (isFailure(result)) throw thrown(result)
  return result
}

/** Grammars compiled from text by `GBNF()` and the helpers, most recent last. */
const compiledTexts = new Map()
const COMPILED_TEXTS = 64

/** A grammar from GBNF text, a `Grammar`, or anything whose `toString()` is GBNF. */
function toGrammar(grammar, options = {}) {
  if (grammar instanceof Grammar) return grammar
  const text = typeof grammar === 'string' ? grammar : String(grammar)
  if (options.vocabulary) return Grammar.fromGbnf(text, options)
  const key = `${options.root ?? 'root'}\u0000${options.target ?? 'grail'}\u0000${text}`
  let compiled = compiledTexts.get(key)
  if (compiled === undefined) {
    compiled = Grammar.fromGbnf(text, options)
    if (compiledTexts.size >= COMPILED_TEXTS) compiledTexts.delete(compiledTexts.keys().next().value)
  } else {
    compiledTexts.delete(key)
  }
  compiledTexts.set(key, compiled)
  return compiled
}

/**
 * Per grammar (and vocabulary): a matcher at the start that is never moved, and the rule
 * lists met. Every state and helper on that grammar starts from a fork of it, so they
 * share the engine's step cache and the numbering of rule lists.
 */
const templates = new WeakMap()
const NO_VOCABULARY = {}

function templateFor(grammar, vocabulary) {
  let byVocabulary = templates.get(grammar)
  if (byVocabulary === undefined) {
    byVocabulary = new WeakMap()
    templates.set(grammar, byVocabulary)
  }
  const key = vocabulary ?? NO_VOCABULARY
  let template = byVocabulary.get(key)
  if (template === undefined) {
    const matcher = vocabulary ? new Matcher(grammar, vocabulary) : new Matcher(grammar)
    // A bounded history keeps each step cheap; a state further back than STATE_HISTORY
    // bytes from the end of its chain is rebuilt from its input when it needs a matcher.
    matcher.setHistoryLimit(STATE_HISTORY)
    template = { matcher, rules: [] }
    byVocabulary.set(key, template)
  }
  return template
}

// -------------------------------------------------------------------------- matchers

// The addon's own type errors for these arguments are unclear (napi-rs names no type, or
// wraps a negative id round to a large one): checked here first.
const nativeFillDraftMasks = Matcher.prototype.fillDraftMasks
Matcher.prototype.fillDraftMasks = function fillDraftMasks(draft, out) {
  if (!Array.isArray(draft)) throw new TypeError('fillDraftMasks: the draft must be an array of token ids')
  const bad = draft.findIndex((id) => !Number.isInteger(id) || id < 0 || id > 0xffffffff)
  if (bad >= 0) {
    throw new RangeError(`fillDraftMasks: draft[${bad}] is ${String(draft[bad])}, not a token id`)
  }
  if (Object.prototype.toString.call(out) !== '[object Uint32Array]') {
    throw new TypeError(
      'fillDraftMasks: out must be a Uint32Array of draft.length + 1 rows ' +
        '(allocateTokenBitmask(vocabulary.size, draft.length + 1))'
    )
  }
  return nativeFillDraftMasks.call(this, draft, out)
}

// ---------------------------------------------------------------- the `gbnf` API

/** The types of next-character rules (the `gbnf` package's values, and Grail's token). */
const RuleType = Object.freeze({
  CHAR: 'char',
  CHAR_EXCLUDE: 'char_exclude',
  END: 'end',
  TOKEN: 'token',
})

/** True when a rule's value item is an inclusive range `[first, last]`. */
function isRange(value) {
  return Array.isArray(value) && value.length === 2 &&
    typeof value[0] === 'number' && typeof value[1] === 'number'
}

/** Text from what `add` takes: a string, a code point, or an array of code points. */
function inputText(input) {
  if (input === undefined || input === null) return ''
  if (typeof input === 'string') return input
  if (typeof input === 'number') return String.fromCodePoint(input)
  if (Array.isArray(input)) return String.fromCodePoint(...input)
  return String(input)
}

const INNER = Symbol('grail-gbnf.state')
const UNNUMBERED = 4294967295
const STATE_HISTORY = 1024

/**
 * An immutable parse state: a grammar and the input so far. Iterate it for the rules of
 * what may come next; `add(text)` (or calling the state) returns a new state.
 *
 * States of one `GBNF()` call share native matchers: a chain of `add`s moves one matcher
 * on (it keeps its history), and a state that is no longer at the end of its chain gets a
 * copy of the matcher rolled back to it when it is asked something (then it heads a chain
 * of its own). Rule lists are numbered by the addon, and each distinct list is turned into
 * (frozen) objects once.
 */
function ParseState() {
  throw new TypeError('parse states come from GBNF(grammar, input)')
}
Object.setPrototypeOf(ParseState.prototype, Function.prototype)

function makeState(inner) {
  const state = (input) => state.add(input)
  Object.setPrototypeOf(state, ParseState.prototype)
  state[INNER] = inner
  return state
}

function innerOf(state) {
  const inner = state?.[INNER]
  if (!inner) throw new TypeError('not a grail-gbnf parse state')
  return inner
}

/** The native matcher at this state (the chain's, or a copy rolled back to it). */
function matcherOf(inner) {
  const chain = inner.chain
  if (chain.head !== inner) {
    let matcher
    try {
      matcher = chain.matcher.forkAt(inner.length)
    } catch {
      // Further back than the matcher's history: the state's input again, from the start.
      matcher = inner.family.start.fork()
      if (matcher.advance(inner.input) !== null) {
        throw new GrailError('grail-gbnf: a state could not be rebuilt from its input')
      }
    }
    inner.chain = { matcher, head: inner }
  }
  return inner.chain.matcher
}

function freeze(rules) {
  for (const rule of rules) {
    if (rule.value) {
      for (const item of rule.value) if (Array.isArray(item)) Object.freeze(item)
      Object.freeze(rule.value)
    }
    Object.freeze(rule)
  }
  return Object.freeze(rules)
}

function stateRules(state) {
  const inner = innerOf(state)
  if (inner.rules !== null) return inner.rules
  const family = inner.family
  let number = inner.number
  if (number === undefined) number = inner.number = matcherOf(inner).rulesNumberNow()
  let rules
  if (number === UNNUMBERED) {
    rules = freeze(matcherOf(inner).nextRules())
  } else {
    rules = family.rules[number]
    if (rules === undefined) rules = family.rules[number] = freeze(family.start.rulesOfNumber(number))
  }
  inner.rules = rules
  return rules
}

function advanced(inner, input) {
  const text = inputText(input)
  const matcher = matcherOf(inner)
  // One character (the usual step) goes as a code point: no string to convert.
  const code = text.length === 1 || (text.length === 2 && text.codePointAt(0) > 0xffff) ? text.codePointAt(0) : -1
  const number = code >= 0 && (code < 0xd800 || code > 0xdfff) ? matcher.stepChar(code) : matcher.step(text)
  if (number < 0) {
    const failure = matcher.advance(text)
    throw new InputParseError(input, failure.pos, inner.input, failure.expected)
  }
  const next = {
    family: inner.family,
    chain: inner.chain,
    // One history step per UTF-8 byte accepted.
    length: inner.length + (text.length === 1 && text.charCodeAt(0) < 0x80 ? 1 : Buffer.byteLength(text)),
    input: inner.input + text,
    number,
    rules: null,
  }
  inner.chain.head = next
  return makeState(next)
}

Object.assign(ParseState.prototype, {
  /** The rules of what may come next (frozen objects). */
  *rules() {
    yield* stateRules(this)
  },

  /** A new state: this one after `input` (a string, a code point or code points). */
  add(input) {
    return advanced(innerOf(this), input)
  },

  /** Forced text: what the grammar allows next whatever comes (at most `maxChars`). */
  forced(maxChars = 256) {
    return matcherOf(innerOf(this)).forced(maxChars)
  },

  /** Writes the tokens allowed next into row `row` of `bitmask` (needs a vocabulary). */
  fillTokenBitmask(bitmask, row = 0) {
    tokenMatcher(innerOf(this)).fillNextTokenBitmask(bitmask, row)
  },

  /** The tokens allowed next, sorted (needs a vocabulary). */
  allowedTokens() {
    return tokenMatcher(innerOf(this)).allowedTokens()
  },

  /** A native `Matcher` at this state (a copy: it can change without changing this). */
  matcher() {
    const inner = innerOf(this)
    return matcherOf(inner).forkAt(inner.length)
  },
})

ParseState.prototype[Symbol.iterator] = function () {
  return stateRules(this)[Symbol.iterator]()
}

function tokenMatcher(inner) {
  if (!inner.family.vocabulary) {
    throw new GrailError('this state has no vocabulary: GBNF(grammar, input, { vocabulary })')
  }
  // Masks do not move the matcher.
  return matcherOf(inner)
}

for (const [name, get] of Object.entries({
  /** The number of rules. */
  size() {
    return stateRules(this).length
  },
  /** The grammar, as GBNF text. */
  grammar() {
    return innerOf(this).family.grammar.gbnf
  },
  /** The input so far. */
  input() {
    return innerOf(this).input
  },
  /** True when the input so far is a complete match (an `end` rule, always last). */
  complete() {
    const rules = stateRules(this)
    return rules.length > 0 && rules[rules.length - 1].type === 'end'
  },
  /** True when the input so far can be completed (false only for a grammar that matches nothing). */
  viable() {
    return matcherOf(innerOf(this)).isViable()
  },
})) {
  Object.defineProperty(ParseState.prototype, name, { get, configurable: true })
}

Object.defineProperty(ParseState, Symbol.hasInstance, {
  value: (value) => typeof value === 'function' && value[INNER] !== undefined,
})

/**
 * The `gbnf` package's entry point: an immutable state over `grammar` (GBNF text, or a
 * `Grammar`) after `initial` input. Throws `GrammarParseError` for a grammar Grail
 * refuses and `InputParseError` for input the grammar does not allow.
 *
 * `options.root` picks the start rule, `options.target` (`llama.cpp`) refuses what
 * llama.cpp refuses; `options.vocabulary` lets the state fill token masks.
 */
function GBNF(grammar, initial = '', options = {}) {
  const compiled = toGrammar(grammar, options)
  const vocabulary = options.vocabulary ?? null
  const template = templateFor(compiled, vocabulary)
  const matcher = template.matcher.fork()
  const inner = {
    family: { grammar: compiled, vocabulary, rules: template.rules, start: template.matcher },
    chain: null,
    length: 0,
    input: '',
    number: undefined,
    rules: null,
  }
  inner.chain = { matcher, head: inner }
  const start = makeState(inner)
  return inputText(initial) === '' ? start : start.add(initial)
}

// --------------------------------------------------------------------------- helpers

function run(grammar, text, options) {
  const matcher = templateFor(toGrammar(grammar, options), null).matcher.fork()
  return matcher.acceptText(inputText(text)) && matcher.isViable() ? matcher : null
}

/** True when `text` is a complete match of `grammar` (GBNF text or a `Grammar`). */
function matches(grammar, text, options = {}) {
  return run(grammar, text, options)?.isAccepting() ?? false
}

/** True when `text` can still be completed into a match of `grammar` (or is one). */
function viable(grammar, text, options = {}) {
  return run(grammar, text, options) !== null
}

/** The text `grammar` forces after `text` (null when `text` is not viable). */
function forced(grammar, text = '', options = {}) {
  const matcher = run(grammar, text, options)
  return matcher === null ? null : matcher.forced(options.maxChars ?? 256)
}

/** The diagnostics of `grail check` for GBNF text: `{ ok, diagnostics }`. */
function check(text, options = {}) {
  const result = native.check(String(text), { root: options.root, target: options.target },
    options.vocabulary)
  for (const diagnostic of result.diagnostics) {
    if (diagnostic.help === undefined) diagnostic.help = null
  }
  return result
}

/** A bitmask for `rows` rows over a vocabulary of `vocabularySize` tokens. */
function allocateTokenBitmask(vocabularySize, rows = 1) {
  return new Uint32Array(rows * Math.ceil(vocabularySize / 32))
}

/** The token ids set in row `row` of `bitmask` (rows of `ceil(vocabularySize / 32)`). */
function bitmaskIds(bitmask, vocabularySize, row = 0) {
  const words = Math.ceil(vocabularySize / 32)
  const ids = []
  for (let word = 0; word < words; word++) {
    let bits = bitmask[row * words + word]
    while (bits !== 0) {
      const low = bits & -bits
      ids.push(word * 32 + 31 - Math.clz32(low))
      bits ^= low
    }
  }
  return ids
}

/**
 * Checks a model's `output` against `tools` (as `Grammar.fromTools` takes them):
 * `{ valid, toolCalls, content, reasoning }` or `{ valid: false, feedback, faults }`.
 */
function validateCall(tools, output, options = {}) {
  const result = native.validateCall(jsonText(tools), String(output), options)
  if (isFailure(result)) throw thrown(result)
  const { toolCallsJson, ...rest } = result
  return toolCallsJson === undefined ? rest : { ...rest, toolCalls: JSON.parse(toolCallsJson) }
}

// Named exports written one by one, so that Node's ES module loader sees them
// (`import GBNF, { RuleType } from 'grail-gbnf'`).
module.exports = GBNF
module.exports.default = GBNF
module.exports.GBNF = GBNF
module.exports.RuleType = RuleType
module.exports.isRange = isRange
module.exports.ParseState = ParseState
module.exports.GrailError = GrailError
module.exports.GrammarParseError = GrammarParseError
module.exports.GrammarError = GrammarParseError
module.exports.InputParseError = InputParseError
module.exports.SchemaError = SchemaError
module.exports.ToolsError = ToolsError
module.exports.Grammar = Grammar
module.exports.Matcher = Matcher
module.exports.Vocabulary = Vocabulary
module.exports.matches = matches
module.exports.viable = viable
module.exports.forced = forced
module.exports.check = check
module.exports.validateCall = validateCall
module.exports.allocateTokenBitmask = allocateTokenBitmask
module.exports.bitmaskIds = bitmaskIds
module.exports.fillNextTokenBitmasks = native.fillNextTokenBitmasks
module.exports.version = native.version()
