import type { LanguageModelV2Usage, LanguageModelV3Usage } from '@ai-sdk/provider';
import type { ModelUsage } from './language-model.js';

const add = (a: number | undefined, b: number | undefined) => (a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0));

/** The usages of several model calls added up, in the shape (v2 or v3) of the first. */
export function sumUsage(usages: readonly ModelUsage[]): ModelUsage | undefined {
  const [first, ...rest] = usages;
  if (!first || rest.length === 0) return first;
  if (typeof first.inputTokens === 'object' || typeof first.outputTokens === 'object') {
    const all = usages as readonly LanguageModelV3Usage[];
    const sum = (pick: (u: LanguageModelV3Usage) => number | undefined) =>
      all.reduce<number | undefined>((t, u) => add(t, pick(u)), undefined);
    return {
      inputTokens: {
        total: sum((u) => u.inputTokens?.total),
        noCache: sum((u) => u.inputTokens?.noCache),
        cacheRead: sum((u) => u.inputTokens?.cacheRead),
        cacheWrite: sum((u) => u.inputTokens?.cacheWrite),
      },
      outputTokens: {
        total: sum((u) => u.outputTokens?.total),
        text: sum((u) => u.outputTokens?.text),
        reasoning: sum((u) => u.outputTokens?.reasoning),
      },
    };
  }
  const all = usages as readonly LanguageModelV2Usage[];
  const sum = (pick: (u: LanguageModelV2Usage) => number | undefined) =>
    all.reduce<number | undefined>((t, u) => add(t, pick(u)), undefined);
  const out: LanguageModelV2Usage = {
    inputTokens: sum((u) => u.inputTokens),
    outputTokens: sum((u) => u.outputTokens),
    totalTokens: sum((u) => u.totalTokens),
  };
  const reasoning = sum((u) => u.reasoningTokens);
  const cached = sum((u) => u.cachedInputTokens);
  if (reasoning !== undefined) out.reasoningTokens = reasoning;
  if (cached !== undefined) out.cachedInputTokens = cached;
  return out;
}
