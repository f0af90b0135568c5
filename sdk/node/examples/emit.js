'use strict';
// emit.js PREFIX COUNT: checkpoints PREFIX:begin, PREFIX:0:café .. PREFIX:COUNT-1:café,
// PREFIX:end (used by sdk/test_all.sh).
const { checkpoint } = require('..');

const [prefix, count] = [process.argv[2], Number(process.argv[3])];
checkpoint(`${prefix}:begin`);
for (let i = 0; i < count; i++) checkpoint(`${prefix}:${i}:café`);
checkpoint(`${prefix}:end`);
