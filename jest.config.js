/** @type {import('jest').Config} */
const swc = JSON.parse(require('fs').readFileSync(`${__dirname}/.swcrc`, 'utf8'));

// pg-boss and its dependencies ship as ES modules only; jest's module system needs them as CommonJS.
const ESM_PACKAGES = ['pg-boss', 'rrule-temporal', 'serialize-error', 'non-error', 'temporal-spec', '@apidevtools/json-schema-ref-parser'];

module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(t|j|mj)s$': ['@swc/jest', { ...swc, swcrc: false }] },
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_PACKAGES.join('|')})/)`],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30000,
  maxWorkers: 2,
  testSequencer: '<rootDir>/test/support/sequencer.js',
};
