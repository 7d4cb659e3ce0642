import {
  type AgentEvent,
  CompactionProvider,
  type CompactionStrategy,
  type ContextAudit,
  compactWhen,
  createAgent,
  createAuditProvider,
  defineTool,
  type EventHandler,
  Message,
  slidingWindow,
  summarization,
  truncation,
} from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { describe, expect, it } from 'vitest';
import { createInspectorModel, type InspectorModelOptions } from './model.js';
import { createScenarioAgent, RESEARCH_STEPS, SCENARIO_TURNS } from './scripted-scenario.js';

/** A content handler that feeds `model` and keeps every event. */
function feed(options: InspectorModelOptions = {}) {
  const model = createInspectorModel(options);
  const events: AgentEvent[] = [];
  const onEvent: EventHandler = Object.assign(
    (e: AgentEvent) => {
      events.push(e);
      model.apply(e);
    },
    { includeContent: true },
  );
  return { model, events, onEvent };
}

const runsOf = (model: ReturnType<typeof createInspectorModel>) => {
  const snap = model.snapshot();
  return snap.sessions.flatMap((s) => s.runIds).map((id) => snap.runs[id]!);
};

describe('createInspectorModel', () => {
  it("gives each run's first call the sources and tokens of the run's audit, and the same repeated prefix", async () => {
    const { model, onEvent } = feed();
    const { agent, audits } = createScenarioAgent({ onEvent });
    const session = agent.createSession({ sessionId: 's1' });
    for (const turn of SCENARIO_TURNS) await agent.run(turn, { session });
    const runs = runsOf(model);
    expect(runs).toHaveLength(4);
    runs.forEach((run, i) => {
      const audit = audits[i]!;
      const call = run.calls[0]!;
      const fromAudit = audit.sources
        .filter((s) => s.tokens > 0)
        .map(({ sourceId, messageTokens, instructionTokens, toolTokens, tokens }) => ({
          sourceId,
          messageTokens,
          instructionTokens,
          toolTokens,
          tokens,
        }));
      const fromModel = call.sources.map(({ sourceId, messageTokens, instructionTokens, toolTokens, tokens }) => ({
        sourceId,
        messageTokens,
        instructionTokens,
        toolTokens,
        tokens,
      }));
      const bySource = (a: { sourceId: string }, b: { sourceId: string }) => a.sourceId.localeCompare(b.sourceId);
      expect(fromModel.sort(bySource), `run ${i + 1}`).toEqual(fromAudit.sort(bySource));
      expect(call.totalTokens).toBe(audit.totalTokens);
      if (i > 0) expect(call.cache.repeatedTokens, `run ${i + 1}`).toBe(audit.prefix!.repeatedTokens);
      // Prompt order: every tool, then every instruction, then every message.
      const kinds = call.items.map((item) => item.kind);
      expect(kinds.join(',')).toMatch(/^(tool,)+(instructions,)+(message,)*message$/);
    });
    expect(runs[1]!.calls).toHaveLength(RESEARCH_STEPS + 1);
    expect(runs[1]!.tools.map((t) => [t.toolName, t.status, t.call])).toEqual([
      ['search_docs', 'done', 1],
      ['search_docs', 'done', 2],
      ['search_docs', 'done', 3],
    ]);
  });

  it('names the source whose change broke the prompt cache first, with advice', async () => {
    const { model, onEvent } = feed();
    const { agent } = createScenarioAgent({ onEvent });
    const session = agent.createSession();
    for (const turn of SCENARIO_TURNS) await agent.run(turn, { session });
    const runs = runsOf(model);
    expect(runs[0]!.calls[0]!.cache).toMatchObject({ compared: false, repeatedTokens: 0 });
    expect(runs[1]!.calls[0]!.cache.firstChange).toEqual({
      kind: 'instructions',
      sourceId: 'clock',
      reason: 'clock: instruction changed since the previous call',
      advice: "clock: if it changes every run, declare it per-run (stability: 'per-run') so it goes after the history",
    });
    expect(runs[3]!.calls[0]!.cache.firstChange).toMatchObject({ sourceId: 'clock', reason: 'clock: instruction changes every run' });
    // The difference with the previous call is what the model sees change: the clock, the last answer
    // (now history) and the new input; docs sends the same texts again, and the last question now
    // comes from the history: no change.
    expect(runs[1]!.calls[0]!.diff).toEqual({
      removed: [{ kind: 'instructions', sourceId: 'clock', label: 'instructions', tokens: 9 }],
      added: [
        { kind: 'instructions', sourceId: 'clock', label: 'instructions', tokens: 9 },
        { kind: 'message', sourceId: 'memory', label: 'assistant', tokens: 10 },
        { kind: 'message', sourceId: 'input', label: 'user', tokens: 14 },
      ],
    });
    // Inside a tool loop each call repeats the one before it whole.
    for (const call of runs[1]!.calls.slice(1)) {
      expect(call.cache.firstChange).toBeUndefined();
      expect(call.cache.repeatedTokens).toBeGreaterThan(0);
    }
  });

  it('sees the cache hold up to a per-run provider, and a tool change at the front', async () => {
    const { model, onEvent } = feed();
    let turn = 0;
    const extra = defineTool({ name: 'extra', parameters: { type: 'object' }, execute: () => 1 });
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: () => 'ok' }),
      instructions: 'Be brief.',
      contextProviders: [
        {
          sourceId: 'clock',
          stability: 'per-run',
          beforeRun: ({ context }) => context.extendInstructions('clock', `Turn ${++turn}.`),
        },
        { sourceId: 'flaky', beforeRun: ({ context }) => (turn === 3 ? context.extendTools('flaky', [extra]) : undefined) },
      ],
      onEvent,
    });
    const session = agent.createSession();
    for (const text of ['one', 'two', 'three']) await agent.run(text, { session });
    const [, second, third] = runsOf(model);
    expect(second!.calls[0]!.cache.firstChange).toEqual({
      kind: 'messages',
      sourceId: 'clock',
      reason: 'clock: per-run context after the history, new each run (expected)',
    });
    expect(second!.calls[0]!.cache.repeatedTokens).toBeGreaterThan(0);
    expect(third!.calls[0]!.cache).toMatchObject({
      repeatedTokens: 0,
      firstChange: { kind: 'tools', sourceId: 'flaky', reason: 'flaky: tool "extra" added' },
    });
    expect(third!.calls[0]!.diff.added).toContainEqual({ kind: 'tool', sourceId: 'flaky', label: 'extra', tokens: expect.any(Number) });
  });

  describe('when compaction breaks the prefix, names what it removed and what to do, never the history', () => {
    /** Eight one-line turns through `CompactionProvider` with `strategy`: each run's first call. */
    async function firstCalls(strategy: CompactionStrategy) {
      const { model, onEvent } = feed();
      const agent = createAgent({
        client: new ScriptedChatClient({ replies: () => 'ok' }),
        instructions: 'Be brief.',
        contextProviders: [new CompactionProvider({ strategy })],
        onEvent,
      });
      const session = agent.createSession();
      for (let i = 0; i < 8; i++) await agent.run(`turn ${i}`, { session });
      return runsOf(model).map((r) => r.calls[0]!);
    }
    const PER_RUN = /per-run|stability/;

    it('truncation: removed N messages from the front; keep its target below its limit', async () => {
      const calls = await firstCalls(truncation({ maxMessages: 6 }));
      // Runs 5 and 7 cut the history (7 messages, then 6, cut to half of 6).
      const cut = calls.map((c) => c.cache.firstChange?.sourceId);
      expect(cut).toEqual([undefined, undefined, undefined, undefined, 'memory', undefined, 'memory', undefined]);
      expect(calls[4]!.cache.firstChange).toEqual({
        kind: 'messages',
        sourceId: 'memory',
        reason:
          "memory: compaction removed 5 messages from the front (truncation, a sliding window or the history's maxMessages), so everything after is sent anew",
        advice:
          "memory: expected once per cut; keep compaction's target well below its limit (truncation's target, default 0.5) so it cuts rarely and the front holds for several runs",
      });
      expect(calls[6]!.cache.firstChange?.reason).toMatch(/^memory: compaction removed 4 messages from the front/);
      expect(calls[4]!.removed).toEqual([
        {
          sourceId: 'memory',
          messages: 5,
          tokens: expect.any(Number),
          reason: "removed from the front (compaction: truncation or a sliding window, or the history's window)",
        },
      ]);
      for (const c of calls) expect(c.cache.firstChange?.advice ?? '').not.toMatch(PER_RUN);
    });

    it('a sliding window: cut run after run, so it says the prefix breaks every run and how to cut in steps', async () => {
      const calls = await firstCalls(slidingWindow({ maxGroups: 3 }));
      expect(calls[2]!.cache.firstChange).toMatchObject({
        sourceId: 'memory',
        reason: expect.stringMatching(/^memory: compaction removed 1 message from the front \(truncation, a sliding window/),
        advice: expect.stringMatching(/^memory: expected once per cut/),
      });
      expect(calls[7]!.cache.firstChange).toEqual({
        kind: 'messages',
        sourceId: 'memory',
        reason:
          "memory: compaction removed 2 messages from the front (truncation, a sliding window or the history's maxMessages), so everything after is sent anew",
        advice:
          'memory: the front was cut in 6 runs in a row (a sliding window, or truncation with target: 1), so the prefix breaks every run: cut in steps instead, e.g. truncation({ maxMessages, target: 0.5 }) cuts to half its limit and the front then holds for several runs',
      });
      for (const c of calls.slice(2)) {
        expect(c.cache.firstChange?.advice).not.toMatch(PER_RUN);
        expect(c.removed.map((r) => r.reason)).toEqual([expect.stringMatching(/^removed from the front/)]);
      }
    });

    it('summarization: a summary replaced N messages, then folded the previous summary in', async () => {
      for (const sameText of [false, true]) {
        let made = 0;
        const summarizer = new ScriptedChatClient({ replies: () => (sameText ? 'The user counted turns.' : `Summary ${++made}.`) });
        const calls = await firstCalls(compactWhen({ messages: 6 }, summarization({ client: summarizer, keepRecentGroups: 1 })));
        expect(calls[4]!.cache.firstChange, `same text: ${sameText}`).toEqual({
          kind: 'messages',
          sourceId: 'memory',
          reason: 'memory: compaction replaced 5 earlier messages with a summary',
          advice:
            "memory: expected once per summary; summarize rarely, with a trigger well above what it keeps (compactWhen's trigger, summarization's keepRecentGroups), so the history grows for several runs between summaries",
        });
        // Run 7 summarizes again: the new summary stands for the old one's 5 and 4 more. (A
        // summarizer that writes the same text again leaves the summary's text repeated: the break
        // is at the first message it folded.)
        expect(calls[6]!.cache.firstChange, `same text: ${sameText}`).toMatchObject({
          sourceId: 'memory',
          reason: 'memory: compaction folded the previous summary and 4 more messages into a new summary (of 9 messages now)',
          advice: expect.stringMatching(/^memory: expected once per summary; summarize rarely/),
        });
        expect(calls[6]!.removed).toEqual([
          {
            sourceId: 'memory',
            messages: 5,
            tokens: expect.any(Number),
            reason: 'compaction: replaced by a summary (the previous summary folded in)',
          },
        ]);
      }
    });
  });

  it('says what compaction and budgets removed, and which providers added nothing', async () => {
    const { model, onEvent } = feed();
    const { agent } = createScenarioAgent({ onEvent });
    const session = agent.createSession();
    for (const turn of SCENARIO_TURNS) await agent.run(turn, { session });
    const runs = runsOf(model);
    const last = runs[3]!.calls[0]!;
    expect(last.items.filter((i) => i.summaryOf !== undefined)).toEqual([expect.objectContaining({ sourceId: 'memory', label: 'system' })]);
    expect(last.removed).toEqual([
      { sourceId: 'memory', messages: expect.any(Number), tokens: expect.any(Number), reason: 'compaction: replaced by a summary' },
    ]);
    expect(last.removed[0]!.messages).toBeGreaterThan(1);
    // Earlier runs lost nothing: docs makes its messages anew every run.
    for (const run of runs.slice(0, 3)) for (const call of run.calls) expect(call.removed).toEqual([]);
    // The first run's history had nothing to load yet.
    expect(runs.map((r) => r.idle)).toEqual([
      ['memory', 'compaction', 'audit'],
      ['compaction', 'audit'],
      ['compaction', 'audit'],
      ['compaction', 'audit'],
    ]);
    for (const run of runs) {
      expect(run.diagnostics.filter((d) => d.level === 'budget')).toEqual([
        {
          level: 'budget',
          sourceId: 'docs',
          code: 'budget',
          message: expect.stringMatching(/^cap 120 tokens: kept \d+, dropped 1 item \(lowest value first\)$/),
        },
      ]);
    }
  });

  it('lists a provider that failed or was skipped only as such, with its error, never as having added nothing', async () => {
    const { model, onEvent } = feed();
    const quiet = { sourceId: 'quiet', beforeRun: () => {} };
    const flaky = {
      sourceId: 'flaky',
      onError: 'skip' as const,
      beforeRun: () => {
        throw new Error('index offline');
      },
    };
    const lateSkip = {
      sourceId: 'late-skip',
      onError: 'skip' as const,
      afterRun: () => {
        throw new Error('queue full');
      },
    };
    let failLater = false;
    const writer = {
      sourceId: 'writer',
      afterRun: () => {
        if (failLater) throw new Error('disk full');
      },
    };
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: () => 'ok' }),
      contextProviders: [quiet, flaky, lateSkip, writer],
      onEvent,
    });
    const session = agent.createSession();
    await agent.run('one', { session });
    failLater = true;
    await expect(agent.run('two', { session })).rejects.toThrow(/disk full/);
    const [first, second] = runsOf(model);
    expect(first!.idle).toEqual(['memory', 'quiet', 'writer']);
    expect(first!.diagnostics).toEqual([
      { level: 'skipped', sourceId: 'flaky', code: 'beforeRun', message: 'left out of the run: Error: index offline' },
      { level: 'skipped', sourceId: 'late-skip', code: 'afterRun', message: 'left out of the run: Error: queue full' },
    ]);
    expect(second!.idle).toEqual(['quiet']);
    expect(second!.diagnostics).toEqual([
      { level: 'skipped', sourceId: 'flaky', code: 'beforeRun', message: 'left out of the run: Error: index offline' },
      { level: 'skipped', sourceId: 'late-skip', code: 'afterRun', message: 'left out of the run: Error: queue full' },
      { level: 'failed', sourceId: 'writer', code: 'afterRun', message: 'failed, so the run failed: Error: disk full' },
    ]);
    expect(second!.status).toBe('failed');
  });

  it('keeps no text unless asked, and the text when asked', async () => {
    const run = async (showText: boolean) => {
      const { model, onEvent } = feed({ showText });
      const { agent } = createScenarioAgent({ onEvent });
      const session = agent.createSession();
      for (const turn of SCENARIO_TURNS.slice(0, 2)) await agent.run(turn, { session });
      return JSON.stringify(model.snapshot());
    };
    const hidden = await run(false);
    for (const secret of ['Lisbon', 'Ada', 'prompt caching part', 'clear', 'helpful assistant']) expect(hidden).not.toContain(secret);
    const shown = await run(true);
    for (const secret of ['Lisbon', 'Ada', 'prompt caching part', 'clear', 'helpful assistant']) expect(shown).toContain(secret);
  });

  it('drops the oldest runs past maxRuns, and forgets a session with none left', async () => {
    const { model, onEvent } = feed({ maxRuns: 3 });
    const agent = createAgent({ client: new ScriptedChatClient({ replies: () => 'ok' }), onEvent });
    const first = agent.createSession({ sessionId: 'first' });
    const second = agent.createSession({ sessionId: 'second' });
    await agent.run('a', { session: first });
    for (const text of ['b', 'c', 'd', 'e']) await agent.run(text, { session: second });
    const snap = model.snapshot();
    expect(Object.keys(snap.runs)).toHaveLength(3);
    expect(snap.sessions.map((s) => [s.sessionId, s.runIds.length, s.droppedRuns])).toEqual([['second', 3, 1]]);
    expect(snap.sessions[0]!.runIds).toEqual(Object.keys(snap.runs));
    // A run's later events after it was dropped change nothing.
    expect(model.apply({ type: 'run-end', runId: 'gone', sessionId: 'first', durationMs: 1 })).toBeUndefined();
    expect(() => createInspectorModel({ maxRuns: 0 })).toThrow(/maxRuns must be a positive integer, got 0/);
  });

  it('shows tool calls waiting for approval, a failed run, and warnings', async () => {
    const { model, onEvent } = feed();
    const pay = defineTool({ name: 'pay', parameters: { type: 'object' }, needsApproval: true, execute: () => 'paid' });
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'pay', callId: 'p1' }] }, { error: new Error('service down') }] }),
      tools: [pay],
      onEvent,
    });
    const session = agent.createSession();
    const res = await agent.run('pay the bill', { session });
    expect(res.pendingApprovals?.map((p) => p.callId)).toEqual(['p1']);
    await expect(agent.run([], { session, approvals: [{ callId: 'p1', approved: true }] })).rejects.toThrow(/service down/);
    const [waiting, resumed] = runsOf(model);
    expect(waiting!.tools).toEqual([{ callId: 'p1', toolName: 'pay', call: 1, status: 'awaiting approval' }]);
    expect(waiting!.progress).toBe('done · 1 model call · 0 tool calls · 1 awaiting approval');
    expect(resumed!.tools).toEqual([expect.objectContaining({ callId: 'p1', toolName: 'pay', status: 'done' })]);
    expect(resumed!).toMatchObject({ status: 'failed', progress: 'failed' });
    expect(resumed!.error).toContain('service down');
  });

  it('counts the same tokens as the audit for a plain agent too', async () => {
    const audits: ContextAudit[] = [];
    const { model, onEvent } = feed();
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: () => 'ok' }),
      instructions: 'Be brief.',
      contextProviders: [createAuditProvider({ onAudit: (a) => void audits.push(a) })],
      onEvent,
    });
    await agent.run([Message.user('hello there'), Message.user('and again')]);
    const [run] = runsOf(model);
    expect(run!.calls[0]!.totalTokens).toBe(audits[0]!.totalTokens);
    expect(run!.calls[0]!.items.map((i) => [i.kind, i.sourceId])).toEqual([
      ['instructions', 'agent'],
      ['message', 'input'],
      ['message', 'input'],
    ]);
  });
});
