// pnpm hooks of the workspace.
//
// beforePacking: the manifest `pnpm pack` and `pnpm publish` (and so `changeset publish`) put in a
// tarball has no devDependencies. They name the workspace's private `0.0.0` test servers and
// kits, which a user cannot install and does not need; tooling/pack-contents.test.mjs checks it.
module.exports = {
  hooks: {
    beforePacking(manifest) {
      delete manifest.devDependencies;
      return manifest;
    },
  },
};
