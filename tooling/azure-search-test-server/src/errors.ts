/**
 * An error the server answers with, in the service's format:
 * `{"error":{"code":"","message":"..."}}` with the given HTTP status.
 */
export class SearchServiceError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, message: string, code = '') {
    super(message);
    this.name = 'SearchServiceError';
    this.status = status;
    this.code = code;
  }
}

/** A 400 about a query parameter, worded like the service: `...\r\nParameter name: $filter`. */
export function invalidParameter(parameter: string, message: string): SearchServiceError {
  return new SearchServiceError(400, `${message}\r\nParameter name: ${parameter}`);
}

/** The 400 the service gives for a document batch it cannot read. */
export function invalidRequest(details: string): SearchServiceError {
  return new SearchServiceError(400, `The request is invalid. Details: ${details}`);
}
