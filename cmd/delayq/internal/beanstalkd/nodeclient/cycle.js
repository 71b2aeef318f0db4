'use strict';
// One beanstalkd client cycle through the jackd client library: use a tube, put jobs of
// different priorities and a delayed one, watch and ignore, reserve (most urgent first),
// release with a new priority and a delay, bury, kick, peek, touch, stats-job and delete.
//
// Usage: node cycle.js HOST:PORT
//
// It prints one line per step. Job ids are shown as #1, #2, ... in the order the puts issued
// them, so that two servers' transcripts compare line for line. Delayed jobs are never waited
// for: they are kicked, so the transcript does not depend on timing. An unexpected reply or
// error, or a cycle that takes over 20 seconds, exits non-zero.

const Jackd = require('jackd');

const cycleTimeout = 20 * 1000;
const tube = 'node-cycle';
// The stats-job fields that do not depend on the clock or on the server's id counter: where
// the job is and how it is to be run, then its history (the delay of its last put or release,
// and its counters) on a line of its own.
const placeFields = ['tube', 'state', 'pri', 'ttr'];
const historyFields = ['delay', 'reserves', 'timeouts', 'releases', 'buries', 'kicks'];

const names = new Map(); // server id -> "#n"
const ids = new Map(); // "#n" -> server id

function issued(id) {
  const name = `#${names.size + 1}`;
  names.set(id, name);
  ids.set(name, id);
  return name;
}

function nameOf(id) {
  const name = names.get(id);
  if (name === undefined) {
    throw new Error(`job id ${id} was not issued by this cycle`);
  }
  return name;
}

function idOf(name) {
  const id = ids.get(name);
  if (id === undefined) {
    throw new Error(`no job ${name}`);
  }
  return id;
}

// say prints one step's line; a command that answers nothing but success shows as "ok".
function say(...words) {
  process.stdout.write(words.map((w) => (w === undefined ? 'ok' : w)).join(' ') + '\n');
}

// refused runs a command that must fail with the reply code and returns that code.
async function refused(code, command) {
  try {
    await command();
  } catch (err) {
    if (err.message === code) {
      return code;
    }
    throw err;
  }
  throw new Error(`expected ${code}, the command succeeded`);
}

// statsJob prints two lines for a stats-job document: "stats-job #n place key=value ..." and
// "stats-job #n history key=value ...".
async function statsJob(client, name) {
  const doc = await client.statsJob(idOf(name));
  const fields = new Map();
  for (const line of doc.split('\n')) {
    const m = /^([a-z-]+): (.*)$/.exec(line.trim());
    if (m) {
      fields.set(m[1], m[2]);
    }
  }
  if (fields.get('id') !== idOf(name)) {
    throw new Error(`stats-job ${name} answered for id ${fields.get('id')}`);
  }
  for (const [what, keys] of [['place', placeFields], ['history', historyFields]]) {
    say('stats-job', name, what, ...keys.map((k) => `${k}=${fields.get(k)}`));
  }
}

function body(job) {
  return `${nameOf(job.id)} ${job.payload.toString()}`;
}

async function cycle(client) {
  say('use', await client.use(tube));
  for (const [payload, opts] of [
    ['low', { priority: 100 }],
    ['urgent', { priority: 1 }],
    ['middle', { priority: 50 }],
    ['later', { priority: 0, delay: 3600 }],
  ]) {
    say('put', payload, `pri=${opts.priority}`, `delay=${opts.delay || 0}`, issued(await client.put(payload, { ttr: 60, ...opts })));
  }
  say('watch', tube, await client.watch(tube));
  say('ignore default', await client.ignore('default'));
  say('ignore', tube, await refused('NOT_IGNORED', () => client.ignore(tube)));
  say('peek-ready', body(await client.peekReady()));
  say('peek-delayed', body(await client.peekDelayed()));
  await statsJob(client, '#4');

  say('reserve', body(await client.reserveWithTimeout(0)));
  say('reserve', body(await client.reserveWithTimeout(0)));
  say('release #2 pri=200 delay=3600', await client.release(idOf('#2'), { priority: 200, delay: 3600 }));
  await statsJob(client, '#2');
  say('bury #3 pri=7', await client.bury(idOf('#3'), 7));
  await statsJob(client, '#3');
  say('peek-buried', body(await client.peekBuried()));

  say('reserve', body(await client.reserveWithTimeout(0)));
  say('touch #1', await client.touch(idOf('#1')));
  await statsJob(client, '#1');
  say('delete #1', await client.delete(idOf('#1')));
  say('delete #1 again', await refused('NOT_FOUND', () => client.delete(idOf('#1'))));
  say('peek #1', await refused('NOT_FOUND', () => client.peek(idOf('#1'))));
  say('reserve with only delayed and buried jobs', await refused('TIMED_OUT', () => client.reserveWithTimeout(0)));

  say('kick 10', await client.kick(10));
  await statsJob(client, '#3');
  say('kick-job #2', await client.kickJob(idOf('#2')));
  await statsJob(client, '#2');
  say('kick 10', await client.kick(10));
  await statsJob(client, '#4');
  say('peek #2', body(await client.peek(idOf('#2'))));

  for (let i = 0; i < 3; i++) {
    const job = await client.reserveWithTimeout(0);
    say('reserve', body(job));
    say('delete', nameOf(job.id), await client.delete(job.id));
  }
  say('reserve when empty', await refused('TIMED_OUT', () => client.reserveWithTimeout(0)));
  say('peek-ready when empty', await refused('NOT_FOUND', () => client.peekReady()));
}

async function main() {
  const addr = process.argv[2];
  const m = /^(.+):(\d+)$/.exec(addr || '');
  if (!m) {
    throw new Error('usage: node cycle.js HOST:PORT');
  }
  const client = new Jackd();
  await client.connect({ host: m[1], port: Number(m[2]) });
  try {
    await cycle(client);
  } finally {
    await client.quit();
  }
}

const timer = setTimeout(() => {
  process.stderr.write(`cycle: not done after ${cycleTimeout / 1000} s\n`);
  process.exit(2);
}, cycleTimeout);
timer.unref();

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`cycle: ${err.stack || err}\n`);
    process.exit(1);
  },
);
