// The optional peer, loaded so that its absence is a ConfigurationError saying what to install
// rather than a module-not-found error from the loader. The CommonJS build uses load-peer.cjs.ts
// instead (tsup.config.ts), which requires it.
import type * as Peer from '@cfworker/json-schema';
import { peerLoadError } from './missing-peer.js';

let peer: typeof Peer;
try {
  peer = await import('@cfworker/json-schema');
} catch (error) {
  throw peerLoadError(error);
}

/** `dereference` of the peer. */
export const dereference: typeof Peer.dereference = peer.dereference;
/** `validate` of the peer. */
export const validate: typeof Peer.validate = peer.validate;
