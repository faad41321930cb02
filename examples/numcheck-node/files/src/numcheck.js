'use strict';
// Numbers from user input: is-number decides what counts as one.
const isNumber = require('is-number');

function parseNumber(text) {
  if (!isNumber(text)) throw new RangeError(`not a number: ${JSON.stringify(text)}`);
  return Number(text);
}

function sum(texts) {
  return texts.reduce((total, t) => total + parseNumber(t), 0);
}

module.exports = { parseNumber, sum };
