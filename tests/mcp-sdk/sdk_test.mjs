// Drives `strobe mcp` with the official MCP TypeScript SDK (Client +
// StdioClientTransport), the way a real coding agent would.
//
//   node tests/mcp-sdk/sdk_test.mjs BUILD_DIR
//
// BUILD_DIR holds strobe and fixtures/ (default: build). STROBE_HOME is a fresh
// temporary directory, removed at the end together with the daemon it started.
// Prints one line per check and a final "N passed, M failed"; exits 1 on any failure.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const build = path.resolve(repo, process.argv[2] || 'build');
const strobe = path.join(build, 'strobe');
const fixture = (name) => path.join(build, 'fixtures', name);
// Whether this machine delivers x86 debug-register traps (tests/fixtures/debug_traps.c:
// exit 0 yes, 3 never: a hypervisor that accepts the registers and ignores them).
const debugTraps = (() => {
  const st = spawnSync(fixture('debug_traps')).status;
  assert.ok(st === 0 || st === 3, `debug_traps exited ${st}`);
  return st === 0;
})();

// The 1-based line of a fixture's source holding the comment /* MARKER */.
function lineOf(source, marker) {
  const lines = fs.readFileSync(path.join(repo, 'tests', 'fixtures', source), 'utf8').split('\n');
  const i = lines.findIndex((l) => l.includes(`/* ${marker} */`));
  if (i < 0) throw new Error(`no ${marker} marker in ${source}`);
  return i + 1;
}

const base = fs.mkdtempSync(path.join(os.tmpdir(), 'strobe-sdk-'));
const home = path.join(base, 'home');
const project = path.join(base, 'project');
fs.mkdirSync(project);

let passed = 0;
let failed = 0;

async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}\n     ${(e && e.stack) || e}`);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls fn() until it returns a truthy value (bounded); returns that value.
async function waitUntil(fn, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  let delay = 20;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(delay);
    delay = Math.min(delay * 2, 250);
  }
}

function structured(result) {
  assert.notEqual(result.isError, true, `tool error: ${JSON.stringify(result.content)}`);
  assert.equal(typeof result.structuredContent, 'object');
  assert.equal(result.content[0].type, 'text');
  assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent);
  return result.structuredContent;
}

function pidAlive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

async function stopDaemon() {
  let pid;
  try {
    pid = parseInt(fs.readFileSync(path.join(home, 'strobe.pid'), 'utf8').trim(), 10);
  } catch {
    return;
  }
  if (!pid || !pidAlive(pid)) return;
  // only our own daemon: its executable is the strobe under test
  let exe = '';
  try { exe = fs.readlinkSync(`/proc/${pid}/exe`); } catch { return; }
  // (" (deleted)" when the binary was rebuilt while the daemon ran)
  exe = exe.replace(/ \(deleted\)$/, '');
  if (path.resolve(exe) !== path.resolve(fs.realpathSync(strobe))) return;
  process.kill(pid, 'SIGTERM');
  try {
    await waitUntil(() => !pidAlive(pid), 10000, 'the daemon to exit');
  } catch {
    process.kill(pid, 'SIGKILL');
  }
}

const env = { ...process.env, STROBE_HOME: home };
delete env.STROBE_IDLE_TIMEOUT;

const transport = new StdioClientTransport({
  command: strobe,
  args: ['mcp'],
  env,
  stderr: 'inherit',
});
const client = new Client({ name: 'strobe-sdk-test', version: '1.0.0' });

try {
  await check('connect (initialize + initialized)', async () => {
    await client.connect(transport);
    const info = client.getServerVersion();
    assert.equal(info.name, 'strobe');
    assert.equal(typeof info.version, 'string');
    const caps = client.getServerCapabilities();
    assert.ok(caps.tools, 'server declares the tools capability');
  });

  await check('ping', async () => {
    const r = await client.ping();
    assert.deepEqual(r, {});
  });

  await check('listTools has the nine tools with input schemas', async () => {
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const name of ['debug_launch', 'debug_trace', 'debug_query', 'debug_session',
      'debug_memory', 'debug_breakpoint', 'debug_continue', 'debug_test',
      'debug_test_status']) {
      assert.ok(byName[name], `tool ${name} is listed`);
      assert.equal(byName[name].inputSchema.type, 'object');
      assert.equal(typeof byName[name].inputSchema.properties, 'object');
      assert.ok(byName[name].description.length > 20);
    }
    assert.ok(byName.debug_launch.inputSchema.required.includes('command'));
    assert.ok(byName.debug_launch.inputSchema.required.includes('projectRoot'));
  });

  let sessionId;
  let pid;
  await check('debug_launch hello_exit3', async () => {
    const r = structured(await client.callTool({
      name: 'debug_launch',
      arguments: { command: fixture('hello_exit3'), projectRoot: project },
    }));
    assert.match(r.sessionId, /^hello_exit3-\d{4}-\d{2}-\d{2}-\d{2}h\d{2}(-\d+)?$/);
    assert.equal(typeof r.pid, 'number');
    sessionId = r.sessionId;
    pid = r.pid;
  });

  await check('debug_session status reaches exited with exitCode 3', async () => {
    const st = await waitUntil(async () => {
      const s = structured(await client.callTool({
        name: 'debug_session', arguments: { action: 'status', sessionId },
      }));
      return s.status !== 'running' ? s : null;
    }, 20000, 'the session to end');
    assert.equal(st.status, 'exited');
    assert.equal(st.exitCode, 3);
    assert.equal(st.pid, pid);
  });

  await check('debug_query eventType stdout -> exactly the hello event', async () => {
    const q = structured(await client.callTool({
      name: 'debug_query', arguments: { sessionId, eventType: 'stdout' },
    }));
    assert.equal(q.totalCount, 1);
    assert.equal(q.hasMore, false);
    assert.equal(q.events.length, 1);
    assert.equal(q.events[0].eventType, 'stdout');
    assert.equal(q.events[0].text, 'hello');
  });

  await check('debug_query eventType stderr -> oops; process_exit exists', async () => {
    const q = structured(await client.callTool({
      name: 'debug_query', arguments: { sessionId, eventType: 'stderr' },
    }));
    assert.deepEqual(q.events.map((e) => e.text), ['oops']);
    const x = structured(await client.callTool({
      name: 'debug_query', arguments: { sessionId, eventType: 'process_exit' },
    }));
    assert.equal(x.events.length, 1);
    assert.equal(x.events[0].exitCode, 3);
  });

  await check('SESSION_NOT_FOUND arrives as isError with the code in the text', async () => {
    const r = await client.callTool({
      name: 'debug_session',
      arguments: { action: 'status', sessionId: 'nosuch-2000-01-01-00h00' },
    });
    assert.equal(r.isError, true);
    assert.equal(r.content[0].type, 'text');
    assert.ok(r.content[0].text.startsWith('SESSION_NOT_FOUND:'), r.content[0].text);
    assert.equal(r.structuredContent.error.code, 'SESSION_NOT_FOUND');
  });

  await check('VALIDATION_ERROR for a missing command', async () => {
    const r = await client.callTool({
      name: 'debug_launch', arguments: { projectRoot: project },
    });
    assert.equal(r.isError, true);
    assert.ok(r.content[0].text.startsWith('VALIDATION_ERROR:'), r.content[0].text);
    assert.ok(r.content[0].text.includes('command'), r.content[0].text);
  });

  await check('unknown tool is a JSON-RPC error -32602', async () => {
    await assert.rejects(
      client.callTool({ name: 'debug_teleport', arguments: {} }),
      (e) => e.code === -32602,
    );
  });

  await check('crash_null: one debug_query gives the crash, its stack and locals', async () => {
    const r = structured(await client.callTool({
      name: 'debug_launch',
      arguments: { command: fixture('crash_null'), projectRoot: project },
    }));
    const crash = await waitUntil(async () => {
      const q = structured(await client.callTool({
        name: 'debug_query', arguments: { sessionId: r.sessionId, eventType: 'crash' },
      }));
      return q.events.length ? q.events[0] : null;
    }, 20000, 'the crash event');
    assert.equal(crash.signal, 'SIGSEGV');
    assert.equal(crash.faultAddress, '0x0');
    assert.equal(crash.function, 'read_field');
    assert.equal(crash.line, 54);
    assert.deepEqual(crash.frames.slice(0, 4).map((f) => [f.function, f.line]),
      [['read_field', 54], ['validate', 60], ['process_order', 66], ['main', 75]]);
    const locals = Object.fromEntries(crash.locals.map((v) => [v.name, v.value]));
    assert.equal(locals.count, 3);
    assert.equal(locals.label, 'widget');
    assert.deepEqual(locals.origin, { x: 4, y: -2 });
    assert.equal(crash.lastEventIds.length, 2);
    const stop = structured(await client.callTool({
      name: 'debug_session', arguments: { action: 'stop', sessionId: r.sessionId },
    }));
    assert.equal(stop.success, true);
  });

  await check('poll_ticker: a memory poll and trace watches beside the traced calls', async () => {
    const r = structured(await client.callTool({
      name: 'debug_launch',
      arguments: { command: fixture('poll_ticker'), projectRoot: project },
    }));
    const sid = r.sessionId;
    const t = structured(await client.callTool({
      name: 'debug_trace',
      arguments: { sessionId: sid, add: ['tick'],
        watches: { add: [{ variable: 'g_counter', on: ['tick'] }] } },
    }));
    assert.deepEqual(t.activeWatches.map((w) => [w.label, w.type]), [['g_counter', 'int']]);
    const p = structured(await client.callTool({
      name: 'debug_memory',
      arguments: { sessionId: sid, targets: [{ variable: 'g_counter' }],
        poll: { intervalMs: 50, durationMs: 200 } },
    }));
    assert.equal(p.polling, true);
    assert.equal(p.expectedSamples, 4);
    const snaps = await waitUntil(async () => {
      const q = structured(await client.callTool({
        name: 'debug_query', arguments: { sessionId: sid, eventType: 'variable_snapshot' },
      }));
      return q.events.length >= 4 ? q.events : null;
    }, 20000, '4 variable_snapshot events');
    assert.ok(snaps.every((e) => Number.isInteger(e.values.g_counter)));
    const calls = structured(await client.callTool({
      name: 'debug_query',
      arguments: { sessionId: sid, eventType: 'function_exit', verbose: true, limit: 3 },
    }));
    assert.ok(calls.events.length > 0);
    assert.ok(calls.events.every((e) => Number.isInteger(e.watchValues.g_counter)));
    const stop = structured(await client.callTool({
      name: 'debug_session', arguments: { action: 'stop', sessionId: sid },
    }));
    assert.equal(stop.success, true);
  });

  await check('globals_all: debug_memory reads, writes and reads back while it runs', async () => {
    const r = structured(await client.callTool({
      name: 'debug_launch',
      arguments: { command: fixture('globals_all'), projectRoot: project },
    }));
    await waitUntil(async () => {
      const q = structured(await client.callTool({
        name: 'debug_query', arguments: { sessionId: r.sessionId, eventType: 'stdout' },
      }));
      return q.events.length ? q : null;
    }, 20000, 'the ready line');
    const read = structured(await client.callTool({
      name: 'debug_memory',
      arguments: { sessionId: r.sessionId,
        targets: [{ variable: 'g_config.retries' }, { variable: 'g_list->next->value' },
          { variable: 'lib_counter' }, { variable: 'g_conifg' }] },
    }));
    assert.deepEqual(read.results.slice(0, 2).map((t) => [t.target, t.type, t.value]),
      [['g_config.retries', 'int', 3], ['g_list->next->value', 'int', 2]]);
    assert.ok(read.results[2].value >= 1000);
    assert.equal(read.results[3].error.code, 'VARIABLE_NOT_FOUND');
    assert.match(read.results[3].error.message, /did you mean 'g_config'/);
    const w = structured(await client.callTool({
      name: 'debug_memory',
      arguments: { action: 'write', sessionId: r.sessionId,
        targets: [{ variable: 'g_config.retries', value: 12 }] },
    }));
    assert.deepEqual([w.results[0].oldValue, w.results[0].value], [3, 12]);
    const stop = structured(await client.callTool({
      name: 'debug_session', arguments: { action: 'stop', sessionId: r.sessionId },
    }));
    assert.equal(stop.success, true);
  });

  await check('deadlock_abba: one stacks call names the wait cycle', async () => {
    const r = structured(await client.callTool({
      name: 'debug_launch',
      arguments: { command: fixture('deadlock_abba'), projectRoot: project },
    }));
    const st = await waitUntil(async () => {
      const s = structured(await client.callTool({
        name: 'debug_session', arguments: { action: 'stacks', sessionId: r.sessionId },
      }));
      return s.diagnosis ? s : null;
    }, 20000, 'the deadlock diagnosis');
    assert.match(st.diagnosis, /deadlock: tid \d+ .*holds .* waits for .*held by tid \d+/);
    const waits = st.threads.filter((t) => t.wait && t.wait.kind === 'mutex');
    assert.equal(waits.length, 2);
    structured(await client.callTool({
      name: 'debug_session', arguments: { action: 'stop', sessionId: r.sessionId },
    }));
  });

  await check('config_overwrite: a data watchpoint names the writer and the values', async () => {
    const r = structured(await client.callTool({
      name: 'debug_launch',
      arguments: { command: fixture('config_overwrite'), projectRoot: project },
    }));
    await waitUntil(async () => {
      const q = structured(await client.callTool({
        name: 'debug_query', arguments: { sessionId: r.sessionId, eventType: 'stdout' },
      }));
      return q.events.length ? q : null;
    }, 20000, 'the ready line');
    const watchArgs = { action: 'watch', sessionId: r.sessionId, variable: 'g_config.max_retries' };
    if (!debugTraps) { // no hit can come on this machine: the daemon says so
      const e = await client.callTool({ name: 'debug_memory', arguments: watchArgs });
      assert.equal(e.isError, true);
      assert.match(e.content[0].text, /^WATCH_UNSUPPORTED: this machine never raises/);
      structured(await client.callTool({
        name: 'debug_session', arguments: { action: 'stop', sessionId: r.sessionId },
      }));
      return;
    }
    const w = structured(await client.callTool({ name: 'debug_memory', arguments: watchArgs }));
    assert.equal(w.size, 4);
    assert.equal(w.currentValue, 3);
    process.kill(r.pid, 'SIGUSR1'); // the program resets its config, then overwrites it
    const hit = await waitUntil(async () => {
      const q = structured(await client.callTool({
        name: 'debug_query', arguments: { sessionId: r.sessionId, eventType: 'watch_hit' },
      }));
      return q.events.find((e) => e.changed) || null;
    }, 20000, 'the overwriting watch_hit');
    assert.equal(hit.function, 'parse_name');
    assert.equal(hit.oldValue, 3);
    assert.notEqual(hit.newValue, 3);
    const u = structured(await client.callTool({
      name: 'debug_memory', arguments: { action: 'unwatch', sessionId: r.sessionId, watchId: '*' },
    }));
    assert.ok(u);
    structured(await client.callTool({
      name: 'debug_session', arguments: { action: 'stop', sessionId: r.sessionId },
    }));
  });

  await check('bp_quick: a staged breakpoint stops a 5 ms program; step-over; run to exit', async () => {
    const line = lineOf('bp_quick.c', 'QUICK_BODY');
    const staged = structured(await client.callTool({
      name: 'debug_breakpoint',
      arguments: { add: [{ file: 'bp_quick.c', line, condition: 'v == 2' }] },
    }));
    assert.equal(staged.staged, true);
    const r = structured(await client.callTool({
      name: 'debug_launch',
      arguments: { command: fixture('bp_quick'), projectRoot: project },
    }));
    assert.equal(r.breakpoints.length, 1);
    const bp = r.breakpoints[0];
    assert.deepEqual([bp.line, bp.locations, bp.where[0].function], [line, 1, 'quick']);
    const p = structured(await client.callTool({
      name: 'debug_continue',
      arguments: { sessionId: r.sessionId, action: 'until', condition: { breakpoint: bp.id } },
    }));
    assert.equal(p.state, 'paused');
    assert.deepEqual([p.reason, p.breakpointId, p.function, p.line], ['breakpoint', bp.id, 'quick', line]);
    assert.deepEqual(p.arguments.map((v) => [v.name, v.value]), [['v', 2]]);
    assert.equal(p.frames[1].function, 'main');
    const st = structured(await client.callTool({
      name: 'debug_session', arguments: { action: 'status', sessionId: r.sessionId },
    }));
    assert.deepEqual(st.paused.map((t) => [t.threadId, t.line]), [[p.threadId, line]]);
    const s = structured(await client.callTool({
      name: 'debug_continue', arguments: { sessionId: r.sessionId, action: 'step-over' },
    }));
    assert.deepEqual([s.state, s.reason, s.function, s.line], ['paused', 'step', 'quick', line + 1]);
    const m = structured(await client.callTool({
      name: 'debug_memory',
      arguments: { sessionId: r.sessionId, threadId: s.threadId, targets: [{ variable: 'w' }] },
    }));
    assert.equal(m.results[0].value, 4);
    // the staged spec stays for later launches until removed
    const unstaged = structured(await client.callTool({
      name: 'debug_breakpoint', arguments: { remove: '*' },
    }));
    assert.deepEqual(unstaged.breakpoints, []);
    structured(await client.callTool({
      name: 'debug_breakpoint', arguments: { sessionId: r.sessionId, remove: '*' },
    }));
    const x = structured(await client.callTool({
      name: 'debug_continue', arguments: { sessionId: r.sessionId },
    }));
    assert.deepEqual([x.state, x.exitCode], ['exited', 4]);
    const e = await client.callTool({
      name: 'debug_continue', arguments: { sessionId: r.sessionId },
    });
    assert.equal(e.isError, true);
    assert.ok(e.content[0].text.startsWith('PROCESS_EXITED: '), e.content[0].text);
    structured(await client.callTool({
      name: 'debug_session', arguments: { action: 'stop', sessionId: r.sessionId },
    }));
  });

  await check('debug_test: a deadlocked test diagnosed with its stacks, then noTests', async () => {
    const r = structured(await client.callTool({
      name: 'debug_test', arguments: { projectRoot: project, command: fixture('deadlock_abba') },
    }));
    assert.equal(r.status, 'running');
    const st = await waitUntil(async () => {
      const s = structured(await client.callTool({
        name: 'debug_test_status', arguments: { testRunId: r.testRunId },
      }));
      return s.status === 'completed' ? s : null;
    }, 60000, 'the test run to complete');
    const stuck = st.result.stuck[0];
    // the CPU share is measured (a loaded machine adds a percent or two): the verdict
    // and its two identical samples are what the detector promises
    assert.match(stuck.diagnosis, /^Deadlock: \d% CPU, identical stacks across 2 samples/);
    assert.deepEqual(stuck.threads.map((t) => t.name).sort(),
      ['deadlock_abba', 'worker-a', 'worker-b']);
    const empty = fs.mkdtempSync(path.join(base, 'empty-'));
    const n = structured(await client.callTool({
      name: 'debug_test', arguments: { projectRoot: empty },
    }));
    const done = structured(await client.callTool({
      name: 'debug_test', arguments: { action: 'status', testRunId: n.testRunId },
    }));
    assert.equal(done.result.noTests, true);
    assert.ok(done.result.hint.length > 20);
  });

  await check('pricing.py: a Python breakpoint and trace given to the launch', async () => {
    const root = path.join(repo, 'tests', 'fixtures', 'python');
    const src = fs.readFileSync(path.join(root, 'shop', 'pricing.py'), 'utf8').split('\n');
    const line = src.findIndex((l) => l.includes('return round(price')) + 1;
    const r = structured(await client.callTool({
      name: 'debug_launch',
      arguments: {
        command: '/usr/bin/python3.11', args: ['shop/pricing.py'], cwd: root, projectRoot: root,
        tracePatterns: ['shop.pricing.Cart.total'],
        breakpoints: [{ file: 'shop/pricing.py', line, condition: 'rate == 0.5' }],
      },
    }));
    const p = structured(await client.callTool({
      name: 'debug_continue', arguments: { sessionId: r.sessionId, action: 'until' },
    }));
    assert.deepEqual([p.state, p.reason, p.function, p.line],
      ['paused', 'breakpoint', 'shop.pricing.discount', line]);
    assert.deepEqual(p.arguments.map((v) => [v.name, v.value]), [['price', 10], ['rate', 0.5]]);
    assert.ok(p.frames.some((f) => f.function === 'shop.pricing.Cart.total'), p.frames);
    structured(await client.callTool({
      name: 'debug_breakpoint', arguments: { sessionId: r.sessionId, remove: '*' },
    }));
    structured(await client.callTool({
      name: 'debug_continue', arguments: { sessionId: r.sessionId, timeoutMs: 100 },
    }));
    const st = await waitUntil(async () => {
      const s = structured(await client.callTool({
        name: 'debug_session', arguments: { action: 'status', sessionId: r.sessionId },
      }));
      return s.status !== 'running' ? s : null;
    }, 60000, 'pricing.py to end');
    assert.equal(st.exitCode, 0);
    const q = structured(await client.callTool({
      name: 'debug_query', arguments: { sessionId: r.sessionId, eventType: 'function_enter' },
    }));
    assert.deepEqual(q.events.map((e) => e.function), Array(3).fill('shop.pricing.Cart.total'));
    structured(await client.callTool({
      name: 'debug_session', arguments: { action: 'stop', sessionId: r.sessionId },
    }));
  });

  await check('debug_session stop deletes the session', async () => {
    const r = structured(await client.callTool({
      name: 'debug_session', arguments: { action: 'stop', sessionId },
    }));
    assert.equal(r.success, true);
    assert.equal(r.eventsCollected, 3);
    const l = structured(await client.callTool({
      name: 'debug_session', arguments: { action: 'list' },
    }));
    assert.deepEqual(l.sessions, []);
  });
} finally {
  try { await client.close(); } catch { /* already gone */ }
  await stopDaemon();
  fs.rmSync(base, { recursive: true, force: true });
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
