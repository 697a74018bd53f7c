// Runs the TypeScript sources directly (decorator metadata included) for `npm start`, scripts and
// benchmarks; `reflect-metadata` must be loaded before any type-graphql class is evaluated.
process.env.SWC_NODE_PROJECT = process.env.SWC_NODE_PROJECT || require('node:path').join(__dirname, '..', 'tsconfig.json');
require('@swc-node/register');
require('reflect-metadata');
