'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { parseNumber, sum } = require('../src/numcheck.js');

test('parseNumber takes numbers and numeric strings', () => {
  assert.strictEqual(parseNumber('42'), 42);
  assert.strictEqual(parseNumber(' 1.5 '), 1.5);
  assert.throws(() => parseNumber('forty'), RangeError);
});

test('sum adds numeric strings', () => {
  assert.strictEqual(sum(['1', '2', '3.5']), 6.5);
  assert.strictEqual(sum([]), 0);
});
