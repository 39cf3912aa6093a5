/**
 * The import rules of src/ (scripts/architecture.ts runs them in `npm run check`, and also
 * refuses circles between folders). Layers, lowest first: the leaf files at src/ (errors, clock,
 * ids, log, …), db/ and bus/, runtime/, modules/ (the domains: entities, services, topics), the
 * GraphQL face (graphql/ and each domain's resolvers, loaders, inputs and outputs, and modules/index.ts
 * that lists them), then the transports rest/ and http/; app.ts, services.ts, data-source.ts and
 * the CLIs compose them.
 */
const FACE = '\\.(resolver|loaders|inputs|outputs)\\.ts$';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No file reaches itself through its imports (type-only imports count).',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'domain-without-graphql',
      comment: 'In modules/, only the GraphQL face of a domain (resolvers, loaders, inputs, outputs) imports graphql/: services take an Actor, not a context.',
      severity: 'error',
      from: { path: '^src/modules/', pathNot: [FACE, '^src/modules/index\\.ts$'] },
      to: { path: '^src/graphql/' },
    },
    {
      name: 'domain-without-transports',
      comment: 'Nothing in modules/ knows a transport or the job runner.',
      severity: 'error',
      from: { path: '^src/modules/' },
      to: { path: '^src/(http|rest|jobs|cli)/' },
    },
    {
      name: 'domain-without-the-face',
      comment: 'Services, entities and topics never import a resolver, a loader, an input or the registry.',
      severity: 'error',
      from: { path: '^src/modules/', pathNot: [FACE, '^src/modules/index\\.ts$'] },
      to: { path: [FACE.replace('$', '') + '$', '^src/modules/index\\.ts$'] },
    },
    {
      name: 'infrastructure-below-domains',
      comment: 'db/, bus/, runtime/ and jobs/ serve the domains and transports; they import neither.',
      severity: 'error',
      from: { path: '^src/(db|bus|runtime|jobs)/' },
      to: { path: '^src/(modules|graphql|http|rest|cli)/' },
    },
    {
      name: 'graphql-below-transports',
      comment: 'graphql/ knows nothing of HTTP or REST.',
      severity: 'error',
      from: { path: '^src/graphql/' },
      to: { path: '^src/(http|rest|cli)/' },
    },
    {
      name: 'leaves-stay-leaves',
      comment: 'The leaf files at src/ import only each other.',
      severity: 'error',
      from: { path: '^src/(errors|clock|ids|log|timeout|secrets|in-flight)\\.ts$' },
      to: { path: '^src/[^/]+/' },
    },
    {
      name: 'declared-packages',
      comment: 'Every package the code imports is declared in package.json (not merely installed by another).',
      severity: 'error',
      from: {},
      to: { dependencyTypes: ['npm-no-pkg', 'npm-unknown', 'unknown', 'undetermined'] },
    },
    {
      name: 'no-dev-dependencies-at-run-time',
      comment: 'The gateway runs without dev dependencies (the Docker image prunes them): src/ imports them for types only.',
      severity: 'error',
      from: { path: '^src/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    doNotFollow: { path: 'node_modules' },
    // Packages as Node and TypeScript resolve them: subpath exports (graphql-ws/use/ws), types-only packages.
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['require', 'import', 'node', 'types', 'default'],
      mainFields: ['main', 'types', 'typings'],
    },
  },
};
