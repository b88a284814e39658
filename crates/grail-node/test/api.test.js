// The rest of the API: immutable states, errors with positions and diagnostics, grammars
// from JSON Schema and tool registries, matchers, and token masks equal to `grail mask`.
'use strict'

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { grail, repo, shared, hasShared, cliPath, cliJson } = require('./helpers.js')

const { GBNF, Grammar, Matcher, Vocabulary, GrammarParseError, InputParseError, ParseState } = grail

const JSON_GRAMMAR = fs
  .readFileSync(path.join(repo, 'testdata', 'match', 'json-values.match'), 'utf8')
  .split('\n---\n')[0]

test('a state is unchanged by add, and by errors', () => {
  const start = GBNF('root ::= "ab" | "ac"')
  const before = [...start]
  const next = start.add('a')
  assert.notEqual(next, start)
  assert.deepEqual([...start], before)
  assert.equal(start.input, '')
  assert.equal(next.input, 'a')
  assert.throws(() => next.add('x'), InputParseError)
  // b and c, adjacent code points, make one range.
  assert.deepEqual([...next], [{ type: 'char', value: [[98, 99]] }])
  // Branching from one state: each branch evolves alone.
  const b = next.add('b')
  const c = next('c')
  assert.equal(b.complete, true)
  assert.equal(c.complete, true)
  assert.deepEqual([...next], [{ type: 'char', value: [[98, 99]] }])
  // Rules are frozen: a caller cannot change what a state answers.
  const [rule] = start
  assert.ok(Object.isFrozen(rule) && Object.isFrozen(rule.value))
  assert.ok(start instanceof ParseState)
  assert.equal(typeof start, 'function')
  assert.equal(start.grammar, 'root ::= "ab" | "ac"')
})

test('a long input one character at a time, with immutable states', () => {
  const text = '{"a": [1, 2.5, -3e10, true, null, "x\\u00e9\\n"], "b": {"c": []}}'
  let state = GBNF(JSON_GRAMMAR)
  const states = [state]
  for (const character of text) {
    state = state.add(character)
    states.push(state)
  }
  assert.equal(state.complete, true)
  // Every earlier state still answers as a fresh state at its prefix.
  const characters = [...text]
  for (const index of [0, 5, 17, 33, characters.length - 1]) {
    const fresh = GBNF(JSON_GRAMMAR, characters.slice(0, index).join(''))
    assert.deepEqual([...states[index]], [...fresh])
  }
})

test('states far behind the end of their chain (past the matcher history) answer as fresh ones', () => {
  const text = `[${Array.from({ length: 600 }, (_, i) => i).join(', ')}]`
  assert.ok(text.length > 2500)
  let state = GBNF(JSON_GRAMMAR)
  const states = [state]
  for (const character of text) {
    state = state.add(character)
    states.push(state)
  }
  assert.equal(state.complete, true)
  // Just before a comma: `,` may come next, `}` may not.
  for (const index of [3, 40, 1500].map((at) => text.indexOf(',', at))) {
    const fresh = GBNF(JSON_GRAMMAR, text.slice(0, index))
    assert.deepEqual([...states[index]], [...fresh], `at ${index}`)
    assert.equal(states[index].forced(), fresh.forced())
    // A branch from an old state, and the state itself unchanged after it.
    const branch = states[index].add(',')
    assert.equal(branch.input, `${text.slice(0, index)},`)
    assert.throws(() => states[index].add('}'), InputParseError)
    assert.deepEqual([...states[index]], [...fresh])
  }
  // A long text added at once (longer than the history) and refused near its end leaves
  // the state as it was.
  const long = `[${'1, '.repeat(2000)}x]`
  const start = GBNF(JSON_GRAMMAR)
  assert.throws(
    () => start.add(long),
    (error) => error instanceof InputParseError && error.pos === long.length - 2
  )
  assert.deepEqual([...start], [...GBNF(JSON_GRAMMAR)])
  assert.equal(start.add(long.replace('x', '2')).complete, true)
})

test('input errors: positions in UTF-16 units, line and column in all the input', () => {
  const grammar = 'root ::= "é😀" [a-z]+ "\\n" "x"'
  const state = GBNF(grammar, 'é😀ab\n')
  assert.throws(
    () => state.add('y'),
    (error) => error.pos === 0 && error.line === 2 && error.column === 1 && error.src === 'é😀ab\ny'
  )
  assert.throws(
    () => GBNF(grammar).add('é😀a1'),
    (error) => {
      assert.equal(error.pos, 4) // é is 1 unit, 😀 is 2, a is 1
      assert.equal(error.column, 4) // in characters
      assert.equal(error.expected, 'expected [\\na-z]')
      return true
    }
  )
})

test('grammar errors: the position of the first error, and every diagnostic', () => {
  const source = 'root ::= item+\nitem ::= "a" | undefined-rule\nother ::= [z-a\n'
  assert.throws(
    () => GBNF(source),
    (error) => {
      assert.ok(error instanceof GrammarParseError)
      assert.ok(error instanceof grail.GrailError)
      assert.equal(grail.GrammarError, GrammarParseError)
      const [first] = error.diagnostics
      assert.equal(error.pos, first.span.start)
      assert.equal(error.reason, first.message)
      for (const diagnostic of error.diagnostics) {
        assert.equal(diagnostic.severity, 'error')
        assert.ok(diagnostic.line >= 1 && diagnostic.column >= 1)
        assert.equal(typeof diagnostic.code, 'string')
      }
      return true
    }
  )
  // A grammar llama.cpp reads and the `gbnf` package does not: repetition, `.`, digits in
  // names, a leading empty alternative, nested stars.
  for (const source of [
    'root ::= [0-9]{2,4}',
    'root ::= . "x"',
    'root ::= rule2\nrule2 ::= "a"',
    'root ::= | "a"',
    'root ::= ( [x]* )*',
  ]) {
    GBNF(source)
  }
  assert.deepEqual([...GBNF('root ::= ( [x]* )*')], [{ type: 'char', value: [120] }, { type: 'end' }])
})

test('matches, viable, forced', () => {
  assert.equal(grail.matches('root ::= "a"+', 'aaa'), true)
  assert.equal(grail.matches('root ::= "a"+', ''), false)
  assert.equal(grail.viable('root ::= "a"+', ''), true)
  assert.equal(grail.viable('root ::= "a"+', 'b'), false)
  assert.equal(grail.forced('root ::= "hello" [a-z]', 'he'), 'llo')
  assert.equal(grail.forced('root ::= "hello"', 'x'), null)
  assert.equal(grail.matches('start ::= "x"', 'x', { root: 'start' }), true)
})

test('Grammar.fromJsonSchema: a grammar; a refused schema names its pointer', () => {
  const schema = {
    type: 'object',
    properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } },
    required: ['name', 'age'],
    additionalProperties: false,
  }
  const grammar = Grammar.fromJsonSchema(schema)
  assert.ok(grammar.gbnf.includes('::='))
  assert.equal(grail.matches(grammar, '{"name": "a", "age": 3}'), true)
  assert.equal(grail.matches(grammar, '{"name": "a", "age": -3}'), false)
  assert.equal(grail.matches(Grammar.fromJsonSchema(JSON.stringify(schema)), '{"name":"a","age":3}'), true)
  const state = GBNF(grammar, '{"name": "a", "age"')
  assert.ok([...state].length > 0)
  assert.throws(
    () => Grammar.fromJsonSchema({ type: 'array', uniqueItems: true }),
    (error) => {
      assert.ok(error instanceof grail.SchemaError)
      assert.ok(error.diagnostics.some((d) => d.keyword === 'uniqueItems'))
      return true
    }
  )
  // Lenient: the keyword is weakened instead.
  Grammar.fromJsonSchema({ type: 'array', uniqueItems: true }, { lenient: true })
  assert.throws(() => Grammar.fromJsonSchema('{not json'), /not valid JSON/)
})

test('Grammar.fromTools and validateCall', () => {
  const tools = [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        parameters: {
          type: 'object',
          properties: { city: { type: 'string' } },
          required: ['city'],
          additionalProperties: false,
        },
      },
    },
  ]
  const grammar = Grammar.fromTools(tools, { choice: 'required' })
  const call = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
  assert.equal(grail.matches(grammar, call), true)
  assert.equal(grail.matches(grammar, '{"name": "other", "arguments": {}}'), false)
  const valid = grail.validateCall(tools, call, { choice: 'required' })
  assert.equal(valid.valid, true)
  assert.equal(valid.toolCalls[0].function.name, 'get_weather')
  const invalid = grail.validateCall(tools, '{"name": "get_weather", "arguments": {}}', { choice: 'required' })
  assert.equal(invalid.valid, false)
  assert.match(invalid.feedback, /city/)
  assert.ok(invalid.faults.length >= 1)
  assert.throws(() => Grammar.fromTools(tools, { wire: 'nope' }), /wire must be one of/)
})

test('Matcher: jump-forward bytes and the tokens safe to append', () => {
  const texts = ['{"', 'yes', '"', '"}', ',', 'n', 'o', '}', 'y', 'e', 's', '</s>']
  const vocabulary = Vocabulary.fromTokens(texts, { special: [11], eosTokenIds: [11] })
  // Longest token first.
  const tokenize = (bytes) => {
    const text = bytes.toString('utf8')
    const ids = []
    let start = 0
    while (start < text.length) {
      let best = -1
      texts.forEach((token, id) => {
        if (id !== 11 && text.startsWith(token, start) && (best < 0 || token.length > texts[best].length)) best = id
      })
      if (best < 0) return null
      ids.push(best)
      start += texts[best].length
    }
    return ids
  }
  const grammar = Grammar.fromGbnf('root ::= "{\\"yes\\"" ("}" | ",\\"no\\"}")')
  const matcher = new Matcher(grammar, vocabulary)
  assert.deepEqual([...matcher.jumpForwardBytes()], [...Buffer.from('{"yes"')])
  assert.deepEqual([...matcher.jumpForwardBytes(2)], [...Buffer.from('{"')])
  assert.deepEqual(tokenize(Buffer.from('{"yes"')), [0, 1, 2])
  // The closing quote may be the start of `"}`: only `{"` and `yes` are safe.
  assert.deepEqual(matcher.jumpForwardTokens(tokenize), [0, 1])
  assert.equal(matcher.acceptTokens([0, 1]), true)
  assert.deepEqual(matcher.jumpForwardTokens(tokenize), [])
  assert.deepEqual(matcher.jumpForwardTokens(() => null), [])
  assert.throws(() => matcher.jumpForwardTokens(() => [1]), /spell/)
  assert.throws(() => matcher.jumpForwardTokens(() => { throw new Error('no tokenizer here') }), /no tokenizer here/)
  assert.equal(matcher.acceptTokens([3, 11]), true)
  assert.equal(matcher.jumpForwardBytes().length, 0)
  assert.deepEqual(matcher.jumpForwardTokens(tokenize), [])
})

test('Matcher: text and tokens, rollback, fork', () => {
  const vocabulary = Vocabulary.fromTokens(['a', 'b', 'ab', '</s>'], { special: [3], eosTokenIds: [3] })
  assert.equal(vocabulary.size, 4)
  assert.deepEqual(vocabulary.eosTokenIds, [3])
  const grammar = Grammar.fromGbnf('root ::= "a" "b"+')
  const matcher = new Matcher(grammar, vocabulary)
  assert.deepEqual(matcher.allowedTokens(), [0, 2])
  assert.equal(matcher.acceptToken(1), false)
  assert.equal(matcher.acceptToken(2), true)
  assert.deepEqual(matcher.allowedTokens(), [1, 3])
  const fork = matcher.fork()
  assert.equal(matcher.acceptToken(3), true)
  assert.equal(matcher.isTerminated(), true)
  assert.deepEqual(matcher.allowedTokens(), [])
  matcher.rollback()
  assert.deepEqual(matcher.allowedTokens(), [1, 3])
  // A draft checked without moving: b, b, the end, and nothing after it.
  assert.equal(matcher.validateTokens([1, 1, 3, 1]), 3)
  assert.equal(matcher.validateTokens([0]), 0)
  assert.deepEqual(matcher.allowedTokens(), [1, 3])
  assert.equal(fork.isAccepting(), true)
  assert.throws(() => matcher.rollback(5), /cannot roll back/)
  assert.equal(matcher.acceptText('bb'), true)
  assert.equal(matcher.acceptText('a'), false)
  const bitmask = grail.allocateTokenBitmask(vocabulary.size, 2)
  matcher.fillNextTokenBitmask(bitmask, 1)
  assert.deepEqual(grail.bitmaskIds(bitmask, vocabulary.size, 1), [1, 3])
  assert.deepEqual(grail.bitmaskIds(bitmask, vocabulary.size, 0), [])
  assert.throws(() => matcher.fillNextTokenBitmask(new Uint32Array(0)), /words/)
  // A batch: each row as its matcher alone, rows in another order, rows not named kept.
  const batch = [new Matcher(grammar, vocabulary), matcher, fork]
  const rows = grail.allocateTokenBitmask(vocabulary.size, 4)
  rows.fill(7)
  grail.fillNextTokenBitmasks(batch, rows, [3, 1, 0])
  assert.deepEqual(grail.bitmaskIds(rows, vocabulary.size, 3), [0, 2])
  assert.deepEqual(grail.bitmaskIds(rows, vocabulary.size, 1), [1, 3])
  assert.deepEqual(grail.bitmaskIds(rows, vocabulary.size, 0), [1, 3])
  assert.equal(rows[2], 7)
  assert.throws(() => grail.fillNextTokenBitmasks([matcher, matcher], rows), /twice/)
  assert.throws(() => grail.fillNextTokenBitmasks(batch, rows, [0, 0, 1]), /twice/)
  assert.throws(() => grail.fillNextTokenBitmasks(batch, new Uint32Array(1)), /words/)
  assert.throws(() => new Matcher(grammar).allowedTokens(), /no vocabulary/)
})

/** Random allowed tokens (not the end token) accepted by `matcher`, up to `steps`. */
function randomWalk(matcher, random, steps, endId) {
  const walked = []
  for (let step = 0; step < steps; step++) {
    const allowed = matcher.allowedTokens().filter((id) => id !== endId)
    if (allowed.length === 0) break
    const id = allowed[Math.floor(random() * allowed.length)]
    assert.equal(matcher.acceptToken(id), true)
    walked.push(id)
  }
  return walked
}

/** A seeded generator of numbers in [0, 1) (mulberry32). */
function seeded(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const stateOf = (matcher) => [matcher.allowedTokens(), matcher.isAccepting(), matcher.isTerminated()]

// Token 0 ends generation; then one token per letter and a few words.
const DRAFT_TOKENS = ['</s>', ...'abcdenosxy.'.split(''), 'yes', 'no', 'bc']
const ROLLBACK_GRAMMAR = 'root ::= ("a" [b-d] | "bc" | "yes" | "no" | "b" | "." "a")*'

test('Matcher: maxRollbackTokens keeps rollback within k exact and refuses beyond', () => {
  const vocabulary = Vocabulary.fromTokens(DRAFT_TOKENS, { special: [0], eosTokenIds: [0] })
  const grammar = Grammar.fromGbnf(ROLLBACK_GRAMMAR)
  assert.equal(new Matcher(grammar, vocabulary).maxRollbackTokens, null)
  assert.equal(new Matcher(grammar, vocabulary, { maxRollbackTokens: null }).maxRollbackTokens, null)
  for (const limit of [0, 1, 3, 20]) {
    const random = seeded(limit + 1)
    const limited = new Matcher(grammar, vocabulary, { maxRollbackTokens: limit })
    const full = new Matcher(grammar, vocabulary)
    assert.equal(limited.maxRollbackTokens, limit)
    for (let accepted = 1; accepted < 80; accepted++) {
      const [id] = randomWalk(full, random, 1, 0)
      assert.equal(limited.acceptToken(id), true)
      if (accepted % 7 && accepted < 70) continue
      const kept = Math.min(limit, accepted)
      for (let back = 0; back <= kept; back++) {
        const limitedBack = limited.fork()
        const fullBack = full.fork()
        limitedBack.rollback(back)
        fullBack.rollback(back)
        assert.deepEqual(stateOf(limitedBack), stateOf(fullBack), `limit ${limit}, ${accepted} tokens, back ${back}`)
      }
      const before = stateOf(limited)
      assert.throws(
        () => limited.rollback(kept + 1),
        new RegExp(`cannot roll back ${kept + 1} tokens: ${kept} are in the history \\(maxRollbackTokens: ${limit}\\)`)
      )
      assert.deepEqual(stateOf(limited), before)
    }
  }
  // Drafts longer than k: checked and accepted all or nothing, as without the limit.
  const limited = new Matcher(grammar, vocabulary, { maxRollbackTokens: 2 })
  const full = new Matcher(grammar, vocabulary)
  const random = seeded(99)
  for (const id of randomWalk(full, random, 40, 0)) assert.equal(limited.acceptToken(id), true)
  const draft = [...randomWalk(full.fork(), random, 6, 0), DRAFT_TOKENS.indexOf('x')]
  assert.equal(limited.validateTokens(draft), 6)
  assert.equal(full.validateTokens(draft), 6)
  assert.equal(limited.acceptTokens(draft), false)
  assert.deepEqual(stateOf(limited), stateOf(full))
  assert.equal(limited.acceptTokens(draft.slice(0, 6)), true)
  assert.equal(full.acceptTokens(draft.slice(0, 6)), true)
  limited.rollback(2)
  full.rollback(2)
  assert.deepEqual(stateOf(limited), stateOf(full))
  assert.throws(() => limited.rollback(1), /cannot roll back 1 tokens: 0 are in the history/)
})

/** The rows `fillDraftMasks` should write: `fillNextTokenBitmask` on a copy that accepts the draft token by token. */
function draftRowsOneByOne(matcher, draft, words) {
  const walker = matcher.fork()
  const rows = []
  for (let position = 0; position <= draft.length; position++) {
    const row = new Uint32Array(words).fill(0x5a5a)
    walker.fillNextTokenBitmask(row)
    rows.push([...row])
    if (position === draft.length || !walker.acceptToken(draft[position])) break
  }
  return rows
}

function checkDraftRows(matcher, draft, vocabulary) {
  const words = Math.ceil(vocabulary.size / 32)
  const out = new Uint32Array(words * (draft.length + 1)).fill(0x1234)
  const before = stateOf(matcher)
  const expected = draftRowsOneByOne(matcher, draft, words)
  const filled = matcher.fillDraftMasks(draft, out)
  assert.equal(filled, expected.length)
  assert.equal(filled, matcher.validateTokens(draft) + 1)
  expected.forEach((row, position) => {
    assert.deepEqual([...out.subarray(position * words, (position + 1) * words)], row, `${draft} row ${position}`)
  })
  assert.ok(out.subarray(filled * words).every((word) => word === 0x1234), 'rows past the last filled are kept')
  assert.deepEqual(stateOf(matcher), before)
  return { filled, out }
}

test('Matcher: fillDraftMasks equals the masks token by token', () => {
  const vocabulary = Vocabulary.fromTokens(DRAFT_TOKENS, { special: [0], eosTokenIds: [0] })
  const id = (text) => DRAFT_TOKENS.indexOf(text)
  const matcher = new Matcher(Grammar.fromGbnf('root ::= "yes" | "no" | [a-c]+'), vocabulary)
  assert.equal(checkDraftRows(matcher, [id('a'), id('b'), id('c')], vocabulary).filled, 4)
  // A token refused in the middle: the rows stop there.
  const refused = checkDraftRows(matcher, [id('a'), id('y'), id('b')], vocabulary)
  assert.equal(refused.filled, 2)
  assert.deepEqual(grail.bitmaskIds(refused.out, vocabulary.size, 1), [0, id('a'), id('b'), id('c'), id('bc')])
  // The end token in the draft: the row after it is empty, and nothing follows.
  const ended = checkDraftRows(matcher, [id('y'), id('e'), id('s'), 0, id('y')], vocabulary)
  assert.equal(ended.filled, 5)
  assert.deepEqual(grail.bitmaskIds(ended.out, vocabulary.size, 3), [0])
  assert.deepEqual(grail.bitmaskIds(ended.out, vocabulary.size, 4), [])
  assert.equal(checkDraftRows(matcher, [], vocabulary).filled, 1)
  const terminated = matcher.fork()
  assert.equal(terminated.acceptTokens([id('no'), 0]), true)
  assert.equal(checkDraftRows(terminated, [0], vocabulary).filled, 1)
  // Random drafts on random walks, with and without a rollback limit shorter than them.
  for (let seed = 0; seed < 40; seed++) {
    const random = seeded(seed)
    const walker = new Matcher(Grammar.fromGbnf(ROLLBACK_GRAMMAR), vocabulary, {
      maxRollbackTokens: [undefined, 0, 2][seed % 3],
    })
    randomWalk(walker, random, Math.floor(random() * 30), 0)
    const draft = randomWalk(walker.fork(), random, Math.floor(random() * 8), 0)
    if (seed % 2) draft.splice(Math.floor(random() * (draft.length + 1)), 0, Math.floor(random() * vocabulary.size))
    checkDraftRows(walker, draft, vocabulary)
  }
  // Errors: a buffer too small, a token out of the vocabulary, no vocabulary.
  const words = Math.ceil(vocabulary.size / 32)
  assert.throws(
    () => matcher.fillDraftMasks([id('a'), id('a')], new Uint32Array(3 * words - 1)),
    /a draft of 2 tokens needs 3 rows of 1 words/
  )
  assert.throws(
    () => matcher.fillDraftMasks([id('a'), vocabulary.size], new Uint32Array(3 * words)),
    new RegExp(`token ${vocabulary.size} \\(position 1 of the draft\\) is not in this vocabulary of ${vocabulary.size} tokens`)
  )
  assert.throws(() => matcher.fillDraftMasks([1], new Int32Array(2 * words)), /out must be a Uint32Array/)
  assert.throws(() => matcher.fillDraftMasks([1, -1], new Uint32Array(3 * words)), /draft\[1\] is -1, not a token id/)
  assert.throws(() => matcher.fillDraftMasks([1.5], new Uint32Array(2 * words)), /draft\[0\] is 1.5, not a token id/)
  assert.throws(() => new Matcher(Grammar.fromGbnf(ROLLBACK_GRAMMAR)).fillDraftMasks([], new Uint32Array(1)), /no vocabulary/)
})

const vocabularies = [
  ...['byte-level.tokenizer.json', 'sentencepiece.tokenizer.json', 'tiny.vocab.json'].map((name) =>
    path.join(repo, 'testdata', 'vocab', name)
  ),
  ...(hasShared
    ? ['smollm2.vocab.json', 'llama3.vocab.json'].map((name) => path.join(shared, 'bench', 'vocab', name))
    : []),
].filter((file) => fs.existsSync(file))

test('token masks equal `grail mask --format json`', { skip: !cliPath && 'no target/debug/grail' }, () => {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'grail-node-mask-'))
  try {
    const grammarFile = path.join(scratch, 'json.gbnf')
    fs.writeFileSync(grammarFile, JSON_GRAMMAR)
    const texts = ['', '{', '{"a', '{"a": ', '{"a": [1', '{"a": [1, "x\\u00', '{"a": [1, 2]}']
    for (const file of vocabularies) {
      const vocabulary = Vocabulary.fromFile(file)
      const grammar = Grammar.fromGbnf(JSON_GRAMMAR)
      const bitmask = grail.allocateTokenBitmask(vocabulary.size)
      for (const text of texts) {
        const { json } = cliJson(['mask', '--format', 'json', grammarFile, '--vocab', file, '--', text])
        const expected = json.tokens.map((token) => token.id)
        const matcher = new Matcher(grammar, vocabulary)
        assert.equal(matcher.acceptText(text), true)
        matcher.fillNextTokenBitmask(bitmask)
        const where = `${path.basename(file)} after ${JSON.stringify(text)}`
        assert.deepEqual(grail.bitmaskIds(bitmask, vocabulary.size), expected, where)
        assert.deepEqual(matcher.allowedTokens(), expected, where)
        // Through the gbnf-style state too.
        const state = GBNF(grammar, text, { vocabulary })
        assert.deepEqual(state.allowedTokens(), expected, where)
        const viaState = grail.allocateTokenBitmask(vocabulary.size)
        state.fillTokenBitmask(viaState)
        assert.deepEqual(viaState, bitmask, where)
      }
    }
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true })
  }
})

test('Vocabulary errors', () => {
  assert.throws(() => Vocabulary.fromFile('/nonexistent/tokenizer.json'))
  assert.throws(() => Vocabulary.fromTokens(['a'], { special: [4] }), /outside/)
})

test('a bad GRAIL_PREFAULT_MIB is refused by name, at every vocabulary', () => {
  // It sizes the heap made resident at the first vocabulary (src/prefault.rs).
  const before = process.env.GRAIL_PREFAULT_MIB
  try {
    process.env.GRAIL_PREFAULT_MIB = 'lots'
    assert.throws(() => Vocabulary.fromTokens(['a']), /GRAIL_PREFAULT_MIB.*`lots`/)
    process.env.GRAIL_PREFAULT_MIB = '0'
    assert.equal(Vocabulary.fromTokens(['a', 'b']).size, 2)
  } finally {
    if (before === undefined) delete process.env.GRAIL_PREFAULT_MIB
    else process.env.GRAIL_PREFAULT_MIB = before
  }
})
