/**
 * An error a handler throws to answer with `status` and `message`. `startLocalHttpServer` sends it
 * in the server's own error format (its `errorFormat`), so a service's wire format stays its own.
 */
export class HttpError extends Error {
  readonly status: number;

  constructor(status: number, message: string) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
  }
}
