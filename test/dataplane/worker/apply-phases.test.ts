// The two phases with stand-in threads (no worker): who is sent what, and what happens when a thread
// refuses a delta, fails to prepare, or stops in either phase.
import t from 'tap';
import {
  applyInTwoPhases,
  type PhaseSlots,
  type PhaseThread,
} from '../../../lib/dataplane/worker/apply-phases.ts';
import { ModelPayloads } from '../../../lib/dataplane/worker/model-payloads.ts';
import type { CommitReply, ModelPayload, PrepareReply } from '../../../lib/dataplane/worker/protocol.ts';
import type { Model } from '../../../lib/model/index.ts';
import { build, ingress, path, rule } from '../../model/helpers.ts';

class Stopped extends Error {}

const modelOf = (hosts: string[]): Model =>
  build({ ingresses: hosts.map((host, i) => ingress(`i${i}`, { rules: [rule(host, path('/', 'web:80'))] })) })
    .model;
const a = modelOf(['a.test']);
const b = modelOf(['a.test', 'b.test']);

type Behaviour = (call: { type: string; model?: ModelPayload }) => 'ok' | 'stop' | Error;

/** A stand-in thread: records its calls; `behave` decides each answer. */
function fakeThread(hash: string | null, behave: Behaviour = () => 'ok') {
  const calls: string[] = [];
  const thread: PhaseThread = {
    hash,
    up: Promise.resolve(),
    async call<T>(message: { type: string; model?: ModelPayload; hash?: string }): Promise<T> {
      calls.push(message.type === 'prepare' ? `prepare ${message.model?.kind}` : message.type);
      const outcome = behave(message);
      if (outcome === 'stop') throw new Stopped('stopped');
      if (outcome instanceof Error) throw outcome;
      if (message.type === 'prepare') {
        const reply: PrepareReply = { kind: 'full', hash: b.hash, decodeMs: 0, compileMs: 0, cpuMs: 0 };
        return reply as T;
      }
      const reply: CommitReply = { kind: 'full', hash: message.hash ?? '', commitMs: 0 };
      return reply as T;
    },
  };
  return { thread, calls };
}

function slotsOf(threads: PhaseThread[]): PhaseSlots {
  return {
    count: threads.length,
    at: (index) => threads[index] as PhaseThread,
    replaced: (e) => e instanceof Stopped,
  };
}

const apply = (slots: PhaseSlots, onPrepared = () => {}) =>
  applyInTwoPhases(slots, b, new ModelPayloads(a, b), new Map(), onPrepared);

t.test('a thread on the base model gets the delta, one on another model the whole model', async (t) => {
  const onBase = fakeThread(a.hash);
  const elsewhere = fakeThread('another');
  const { record } = await apply(slotsOf([onBase.thread, elsewhere.thread]));
  t.strictSame(onBase.calls, ['prepare delta', 'commit']);
  t.strictSame(elsewhere.calls, ['prepare full', 'commit']);
  t.strictSame(
    record.threads.map((thread) => thread.payload),
    ['delta', 'full'],
  );
  t.equal(onBase.thread.hash, b.hash, 'the commit sets the hash each thread serves');
});

t.test('a thread that refuses the delta (another base) is sent the whole model', async (t) => {
  let refused = false;
  const confused = fakeThread(a.hash, (call) => {
    if (call.model?.kind !== 'delta' || refused) return 'ok';
    refused = true;
    return Object.assign(new Error('another base'), { code: 'DATAPLANE_DELTA_BASE_MISMATCH' });
  });
  await apply(slotsOf([confused.thread]));
  t.strictSame(confused.calls, ['prepare delta', 'prepare full', 'commit']);
});

t.test(
  'one thread fails to prepare: every thread discards, none commits, the error is the one',
  async (t) => {
    const good = fakeThread(a.hash);
    const bad = fakeThread(a.hash, (call) => (call.type === 'prepare' ? new Error('compile failed') : 'ok'));
    let prepared = false;
    await t.rejects(
      apply(slotsOf([good.thread, bad.thread]), () => {
        prepared = true;
      }),
      { message: 'compile failed' },
    );
    t.strictSame(good.calls, ['prepare delta', 'discard']);
    t.strictSame(bad.calls, ['prepare delta', 'discard']);
    t.notOk(prepared, 'a replacement would still start on the previous model');
    t.equal(good.thread.hash, a.hash, 'both still serve the previous model');
  },
);

t.test('a thread that stops in either phase: its replacement takes its place', async (t) => {
  // slot 0 stops while preparing; its replacement (on the previous model) prepares and commits
  const stopsPreparing = fakeThread(a.hash, () => 'stop');
  const replacement = fakeThread(a.hash);
  // slot 1 stops while committing; its replacement starts on the new model, nothing to commit
  const stopsCommitting = fakeThread(a.hash, (call) => (call.type === 'commit' ? 'stop' : 'ok'));
  const threads = [stopsPreparing.thread, stopsCommitting.thread];
  const slots: PhaseSlots = {
    count: 2,
    at: (index) => threads[index] as PhaseThread,
    replaced: (error) => {
      if (!(error instanceof Stopped)) return false;
      if (threads[0] === stopsPreparing.thread) threads[0] = replacement.thread;
      return true;
    },
  };
  const { results } = await apply(slots);
  t.strictSame(stopsPreparing.calls, ['prepare delta']);
  t.strictSame(replacement.calls, ['prepare delta', 'commit']);
  t.strictSame(stopsCommitting.calls, ['prepare delta', 'commit']);
  t.strictSame(
    results.map((result) => result.hash),
    [b.hash, b.hash],
    'both serve the new model',
  );
});
