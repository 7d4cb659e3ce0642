import { ConfigurationError } from '../errors.js';

/** The optional peer `@ctx/core/json-schema` is built on. */
export const PEER = '@cfworker/json-schema';

/**
 * What loading the peer threw, as the error to throw: a `ConfigurationError` saying what to install
 * when the peer is not installed, else the error as it is (a broken install is not a missing one).
 */
export function peerLoadError(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if ((code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && message.includes(PEER)) {
    return new ConfigurationError(
      `@ctx/core/json-schema needs its optional peer dependency ${PEER}, which is not installed. Install it beside @ctx/core (npm install ${PEER}@^4.1.6), or pass createAgent another toolValidator (or none).`,
      { cause: error },
    );
  }
  return error;
}
