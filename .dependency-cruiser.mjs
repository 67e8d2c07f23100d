// The one direction of dependency (docs/architecture.md): domain ← ports ← app ← adapters and composition ←
// entry points. `npm run check` runs this over the source folders; test/unit/architecture.test.ts shows that a
// wrong-way import fails it. Each rule names a layer and the layers it may not reach.
const ENTRY = '^(functions|runners|bin|infra|tools)/';
const OUTSIDE_SOURCE = '^(test|bench|console)/';

/** A rule forbidding `from` to import anything in the project but `allowed` (npm packages are not checked here). */
const layer = (name, from, allowed, comment) => ({
  name,
  comment,
  severity: 'error',
  from: { path: from },
  to: { path: '^(shared|functions|runners|bin|infra|tools|test|bench|console)/', pathNot: allowed },
});

export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import cycle makes two modules one: split out what both need.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    layer(
      'lib-is-a-leaf',
      '^shared/lib/',
      '^shared/lib/',
      'shared/lib holds pure helpers that import nothing of ours.',
    ),
    layer(
      'domain-is-pure',
      '^shared/domain/',
      '^shared/(domain|lib)/',
      'The domain is rules and types: no ports, no app, no adapters, no HTTP.',
    ),
    layer(
      'config-on-domain',
      '^shared/config/',
      '^shared/(config|domain|lib)/',
      'Settings are checked with domain types only.',
    ),
    layer(
      'ports-on-domain',
      '^shared/ports/',
      '^shared/(ports|config|domain|lib)/',
      'A port names domain types only.',
    ),
    layer(
      'app-on-ports',
      '^shared/app/',
      '^shared/(app|ports|config|domain|lib)/',
      'Use cases reach technology only through ports; HTTP maps to them, not the other way.',
    ),
    layer(
      'adapters-on-ports',
      '^shared/adapters/',
      '^shared/(adapters|ports|config|domain|lib)/',
      'An adapter implements a port; it does not call use cases or other layers above it.',
    ),
    layer(
      'http-on-app',
      '^shared/http/',
      '^shared/(http|app|ports|config|domain|lib)/',
      'The HTTP layer maps requests to use cases; it is built by composition, not the reverse.',
    ),
    layer(
      'composition-inside-shared',
      '^shared/composition/',
      '^shared/',
      'Composition wires shared pieces; entry points call it.',
    ),
    {
      name: 'shared-not-on-entry-points',
      comment: 'shared/ is what entry points are built from: it never imports one.',
      severity: 'error',
      from: { path: '^shared/' },
      to: { path: `${ENTRY}|${OUTSIDE_SOURCE}` },
    },
    {
      name: 'entry-points-apart',
      comment:
        'A Lambda handler, the relay and the tools do not import one another; bin/ (the modes) may run them.',
      severity: 'error',
      from: { path: '^(functions|runners|tools)/' },
      to: { path: ENTRY, pathNot: '^$1/' },
    },
    {
      name: 'infra-deploys-not-runs',
      comment:
        'The stack deploys the entry points (it may read their routes, policies and bundle settings) from settings and domain names; it never loads an adapter, a use case or the HTTP layer.',
      severity: 'error',
      from: { path: '^infra/' },
      to: { path: '^(shared/(adapters|app|composition|http|ports)|bin)/' },
    },
    {
      name: 'logger-through-its-port',
      comment: 'Only composition roots build the Powertools logger; everything else takes the Logger port.',
      severity: 'error',
      from: { path: '^shared/(domain|ports|app|adapters|http|config|lib)/' },
      to: { path: 'node_modules/@aws-lambda-powertools/logger' },
    },
    {
      name: 'source-not-on-tests',
      comment: 'Production code never imports tests, benches or the console.',
      severity: 'error',
      from: { path: ENTRY.replace(')/', '|shared)/') },
      to: { path: OUTSIDE_SOURCE },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs'] },
  },
};
