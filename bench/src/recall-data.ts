/**
 * The generated multi-session history of the recall benchmark: one user, `sessions` sessions of
 * `turnsPerSession` turns (a user message and an assistant reply each), deterministic for a seed.
 * Facts (`My <thing> is <value>.`) are said once each at a random turn of an earlier session, or early
 * in the last session (where compaction summarizes them away); every question asks for one fact's
 * value, which no other message holds. Filler turns reuse the facts' words without their values,
 * so a lexical search meets distractors.
 */
export interface RecallFact {
  thing: string;
  value: string;
  /** Index of the session that says it, and the turn in it. */
  session: number;
  turn: number;
}

export interface RecallTurn {
  user: string;
  assistant: string;
}

export interface RecallDataset {
  seed: number;
  userId: string;
  /** `sessions[i][t]`: turn `t` of session `i`. The questions are asked in the last session, after its turns. */
  sessions: RecallTurn[][];
  facts: RecallFact[];
  /** Questions, each with the value that must reach the model, and whether it was said in the last session (summarized away). */
  questions: { text: string; value: string; inLastSession: boolean }[];
}

const THINGS = [
  'gym locker code',
  'sister birthday',
  'cabin wifi password',
  'favourite ramen shop',
  'passport number',
  'bike lock combination',
  'dentist name',
  'landlord phone extension',
  'flight confirmation code',
  'daughter shoe size',
  'car licence plate',
  'insurance policy number',
  'allergy medication',
  'piano teacher name',
  'storage unit number',
  'office desk number',
  'library card pin',
  'boat mooring slot',
  'vet clinic name',
  'tax advisor name',
  'garden shed code',
  'grandmother maiden name',
  'coffee order',
  'running shoe model',
  'blood type',
  'hotel room number',
  'train season ticket id',
  'router admin password',
  'favourite hiking trail',
  'wine club member id',
  'parking spot number',
  'school locker number',
  'band rehearsal room',
  'chess club rating',
  'seed bank account',
  'pottery class day',
  'climbing gym membership id',
  'ferry booking reference',
  'lucky number',
  'backup email alias',
  'spare key hiding place',
  'electric meter id',
  'gas supplier account',
  'mechanic name',
  'favourite tea blend',
  'yoga studio name',
  'tailor address',
  'shoe repair ticket',
  'photo album password',
  'podcast login',
  'kayak rental code',
  'marathon bib number',
  'holiday cottage code',
  'cello string brand',
  'bakery loyalty id',
  'museum pass number',
  'favourite bookshop',
  'swimming lane slot',
  'drone registration id',
  'vaccine batch number',
];
const WORDS = (
  'amber birch cobalt delta ember fjord garnet harbor indigo juniper kestrel lumen maple nimbus onyx pebble quartz ' +
  'raven saffron tundra umber velvet willow xenon yarrow zephyr aurora basil cedar dune'
).split(' ');
const TOPICS = [
  'the weekend plans',
  'a recipe for dinner',
  'the weather this week',
  'a book I am reading',
  'the project at work',
  'a film we watched',
  'the garden',
  'training for a race',
  'a trip to the coast',
  'moving furniture',
  'learning Spanish',
  'the kids school play',
  'a noisy neighbour',
  'fixing the bike',
  'the budget for the month',
  'a birthday party',
];

/** A small seeded PRNG (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Generates the dataset. Defaults: 50 sessions of 42 turns (2,100 turns, 4,200 messages), 49 facts in earlier sessions and 6 in the last. */
export function generateRecallDataset(
  options: { seed?: number; sessions?: number; turnsPerSession?: number; questions?: number } = {},
): RecallDataset {
  const seed = options.seed ?? 20261128;
  const sessionCount = options.sessions ?? 50;
  const turns = options.turnsPerSession ?? 42;
  const random = prng(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  const things = THINGS.slice(0, sessionCount - 1 + 6);
  const taken = new Set<string>();
  const facts: RecallFact[] = things.map((thing, i) => {
    const value = `${pick(WORDS)}-${pick(WORDS)}-${100 + Math.floor(random() * 900)}`;
    // One fact in each earlier session, anywhere in it; six early in the last session (the first quarter, compacted away).
    const inLast = i >= sessionCount - 1;
    const session = inLast ? sessionCount - 1 : i;
    let turn: number;
    do turn = inLast ? Math.floor(random() * Math.floor(turns / 4)) : Math.floor(random() * turns);
    while (taken.has(`${session}/${turn}`));
    taken.add(`${session}/${turn}`);
    return { thing, value, session, turn };
  });
  const sessions: RecallTurn[][] = [];
  for (let s = 0; s < sessionCount; s++) {
    const list: RecallTurn[] = [];
    for (let t = 0; t < turns; t++) {
      const fact = facts.find((f) => f.session === s && f.turn === t);
      if (fact) {
        list.push({
          user: `By the way, my ${fact.thing} is ${fact.value}. Please remember it.`,
          assistant: `Noted, I will remember your ${fact.thing}.`,
        });
        continue;
      }
      const topic = pick(TOPICS);
      // A distractor: a fact's words without its value.
      const mention = random() < 0.3 ? ` I still need to sort out the ${pick(things)} thing.` : '';
      list.push({
        user: `Let us talk about ${topic}. I was thinking about ${pick(WORDS)} and ${pick(WORDS)} today.${mention}`,
        assistant: `Sure, about ${topic}: ${pick(WORDS)} ${pick(WORDS)} sounds like a good plan, tell me more.`,
      });
    }
    sessions.push(list);
  }
  const questionCount = options.questions ?? 40;
  const inLast = facts.filter((f) => f.session === sessionCount - 1);
  const earlier = facts.filter((f) => f.session !== sessionCount - 1);
  const chosen = [...inLast];
  const pool = [...earlier];
  while (chosen.length < questionCount && pool.length) chosen.push(pool.splice(Math.floor(random() * pool.length), 1)[0]!);
  const questions = chosen.map((f) => ({ text: `What is my ${f.thing}?`, value: f.value, inLastSession: f.session === sessionCount - 1 }));
  return { seed, userId: 'bench-user', sessions, facts, questions };
}
