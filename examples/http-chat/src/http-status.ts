import { BackendUnavailableError, ConcurrencyError, CtxError, InvalidInputError, ProviderError } from '@ctx/core';

/**
 * The HTTP status of a failed request, from the error's class alone (the table in the core
 * README): the caller's mistakes are 4xx, everything else is the server's 5xx.
 */
export function httpStatusOf(error: unknown): number {
  if (InvalidInputError.isInstance(error)) return 400;
  if (ConcurrencyError.isInstance(error)) return 409;
  if (BackendUnavailableError.isInstance(error)) return 503;
  if (ProviderError.isInstance(error)) return 502;
  return 500;
}

/** The JSON body of a failed request: the class and, for the caller's own mistakes, the message. */
export function errorBody(error: unknown): { error: string; message: string; turnStored?: boolean } {
  const name = CtxError.isInstance(error) ? error.name : 'Error';
  // A 5xx message may name internals (hosts, keys): the caller gets the class, the log gets the rest.
  const message = httpStatusOf(error) < 500 && error instanceof Error ? error.message : 'The server could not answer; try again later.';
  const body: { error: string; message: string; turnStored?: boolean } = { error: name, message };
  if (ConcurrencyError.isInstance(error) && error.turnStored !== undefined) body.turnStored = error.turnStored;
  return body;
}
