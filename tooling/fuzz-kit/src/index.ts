export { FUZZ_RUNS, fuzzTestTimeout, outcome, type OutcomeOptions } from './outcome.js';
export {
  content,
  Deep,
  deepValue,
  HOSTILE_KEYS,
  json,
  jsonOrDeep,
  key,
  materialize,
  messageLike,
  sessionLike,
  validMessage,
  validSession,
} from './arbitraries.js';
export { nested, nonJsonMessages } from './messages.js';
