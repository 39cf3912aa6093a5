import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { DocumentNode, Kind, OperationDefinitionNode, OperationTypeNode, parse, print } from 'graphql';
import ts from 'typescript';
import * as generated from '../../src/client/generated';
import { ROOT } from './helpers';

/**
 * Issue 6: "All calls use the codegen-typed operations over GraphQL and graphql-ws; no
 * hand-written query strings scattered through the code." Checked on the CLI's source with the
 * TypeScript parser: what it imports, which documents it sends, and that no string in it is
 * GraphQL.
 */
const CLI_DIR = path.join(ROOT, 'src', 'cli', 'hatch');
const GENERATED = path.join(ROOT, 'src', 'client', 'generated');
/** Rules the CLI shares with the gateway (env names): plain code, checked like the CLI's own files. */
const SHARED = [path.join(ROOT, 'src', 'client', 'env-names')];
const OPERATIONS_DIR = path.join(ROOT, 'src', 'client', 'operations');
/** The one module that talks to the gateway. */
const API_FILE = path.join(CLI_DIR, 'api.ts');

/**
 * Packages the CLI may import, and from `graphql` only `print` (no `parse`, no `gql`); `ignore`
 * and tar's `Pack` pack the folder `hatch deploy` uploads (pack.ts). The printer's own module and
 * graphql-ws's client alone keep the CLI's start from loading all of graphql.
 */
const PACKAGES: Record<string, string[] | null> = {
  graphql: ['print'],
  'graphql/language/printer': ['print'],
  'graphql-ws': null,
  'graphql-ws/client': null,
  ws: null,
  '@graphql-typed-document-node/core': null,
  ignore: null,
  tar: ['Pack'],
};

interface SendCall {
  file: string;
  line: number;
  method: string;
  document: string;
}

interface Analysis {
  problems: string[];
  sends: SendCall[];
  /** Files that call fetch, createClient or new WebSocket. */
  network: Set<string>;
}

const KEYWORD_FORM = /\b(query|mutation|subscription|fragment)\b\s*[A-Za-z_]\w*\s*(\([^)]*\)\s*)?(on\s+\w+\s*)?\{/;
const SHORTHAND_FORM = /^\s*\{\s*[A-Za-z_]\w*\s*(\([^)]*\)\s*)?\{/;

/** True when a string from the source is (or is the skeleton of) a GraphQL document. */
function isGraphQL(text: string): boolean {
  if (KEYWORD_FORM.test(text) || SHORTHAND_FORM.test(text)) return true;
  try {
    return parse(text).definitions.some((d) => d.kind === Kind.OPERATION_DEFINITION || d.kind === Kind.FRAGMENT_DEFINITION);
  } catch {
    return false;
  }
}

function cliFiles(dir = CLI_DIR): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? cliFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

function analyse(files: Array<{ file: string; text: string }>): Analysis {
  const problems: string[] = [];
  const sends: SendCall[] = [];
  const network = new Set<string>();
  for (const { file, text } of files) {
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
    const where = (node: ts.Node) => `${path.relative(ROOT, file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    /** Local name → the module it was imported from (resolved for relative imports). */
    const imported = new Map<string, string>();

    const visit = (node: ts.Node): void => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
        const spec = node.moduleSpecifier.text;
        const resolved = spec.startsWith('.') ? path.resolve(path.dirname(file), spec) : spec;
        const names = node.importClause?.namedBindings && ts.isNamedImports(node.importClause.namedBindings) ? node.importClause.namedBindings.elements : [];
        for (const n of names) imported.set(n.name.text, resolved);
        if (node.importClause?.name) imported.set(node.importClause.name.text, resolved);
        if (spec.startsWith('.')) {
          if (resolved !== GENERATED && !SHARED.includes(resolved) && !resolved.startsWith(CLI_DIR + path.sep))
            problems.push(`${where(node)}: imports ${spec}, outside the CLI and the generated operations`);
        } else if (!spec.startsWith('node:') && !builtinModules.includes(spec)) {
          if (!(spec in PACKAGES)) problems.push(`${where(node)}: imports the package ${spec}`);
          const allowed = PACKAGES[spec];
          if (allowed) {
            if (node.importClause?.name || (node.importClause?.namedBindings && ts.isNamespaceImport(node.importClause.namedBindings))) {
              problems.push(`${where(node)}: imports all of ${spec}`);
            }
            for (const n of names) {
              const name = (n.propertyName ?? n.name).text;
              if (!allowed.includes(name)) problems.push(`${where(node)}: imports ${name} from ${spec}`);
            }
          }
        }
      }
      if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'require') {
        problems.push(`${where(node)}: require() instead of an import`);
      }
      if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
        if (!ts.isImportDeclaration(node.parent) && isGraphQL(node.text))
          problems.push(`${where(node)}: a hand-written GraphQL string: ${JSON.stringify(node.text)}`);
      }
      if (ts.isTemplateExpression(node)) {
        const skeleton = node.head.text + node.templateSpans.map((s) => `x${s.literal.text}`).join('');
        if (isGraphQL(skeleton)) problems.push(`${where(node)}: a hand-written GraphQL template: ${JSON.stringify(skeleton)}`);
      }
      if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && ['request', 'stream'].includes(node.expression.name.text)) {
        const [first] = node.arguments;
        const method = node.expression.name.text;
        if (!first || !ts.isIdentifier(first)) {
          problems.push(`${where(node)}: .${method}() is sent something other than a named document`);
        } else if (imported.get(first.text) !== GENERATED || !/Document$/.test(first.text)) {
          // api.ts's own plumbing passes its `document` parameter on; that is checked below.
          if (!(file === API_FILE && first.text === 'document'))
            problems.push(`${where(node)}: .${method}(${first.text}) is not a document from src/client/generated`);
        } else {
          sends.push({ file, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1, method, document: first.text });
        }
      }
      if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && ['fetch', 'createClient'].includes(node.expression.text)) network.add(file);
      if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'WebSocket') network.add(file);
      if (ts.isClassLike(node) && node.heritageClauses?.some((h) => h.types.some((t) => t.expression.getText() === 'WebSocket'))) network.add(file);
      // Whatever goes out as `query` is a printed document, nothing else.
      if (ts.isPropertyAssignment(node) && node.name.getText() === 'query') {
        const init = node.initializer;
        const printed = ts.isCallExpression(init) && init.expression.getText() === 'print' && init.arguments.length === 1 && ts.isIdentifier(init.arguments[0]);
        if (!printed) problems.push(`${where(node)}: sends a query that is not print(<document>): ${init.getText()}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { problems, sends, network };
}

/** The named operations in src/client/operations/*.graphql, printed. */
function committedOperations(): Map<string, string> {
  const ops = new Map<string, string>();
  for (const f of readdirSync(OPERATIONS_DIR).filter((n) => n.endsWith('.graphql'))) {
    for (const d of parse(readFileSync(path.join(OPERATIONS_DIR, f), 'utf8')).definitions) {
      if (d.kind === Kind.OPERATION_DEFINITION && d.name) ops.set(d.name.value, print(d));
    }
  }
  return ops;
}

describe('the hatch CLI sends only codegen-typed operations', () => {
  const files = [...cliFiles(), ...SHARED.map((f) => `${f}.ts`)].map((file) => ({ file, text: readFileSync(file, 'utf8') }));
  const result = analyse(files);

  it('finds every kind of hand-written operation in a sample, so the checks below can fail', () => {
    const bad = analyse([
      {
        file: path.join(CLI_DIR, 'commands', 'sample.ts'),
        text: [
          "import { parse } from 'graphql';",
          "import gql from 'graphql-tag';",
          "import { routes } from '../../../rest/routes';",
          "import { ViewerDocument } from '../../../client/generated';",
          'const VIEWER = `query Viewer { viewer { id } }`;',
          "const apps = '{ apps { nodes { slug } } }';",
          'const byId = (id: string) => `query { deployment(id: "${id}") { status } }`;',
          'export async function run(api: any) {',
          '  await api.request(parse(VIEWER), {});',
          '  await api.request(ViewerDocument, {});',
          '  await api.stream(someDocument, {});',
          "  await fetch('http://x/graphql', { body: JSON.stringify({ query: apps }) });",
          '}',
        ].join('\n'),
      },
    ]);
    const text = bad.problems.join('\n');
    expect(text).toMatch(/sample\.ts:1: imports parse from graphql/);
    expect(text).toMatch(/sample\.ts:2: imports the package graphql-tag/);
    expect(text).toMatch(/sample\.ts:3: imports \.\.\/\.\.\/\.\.\/rest\/routes, outside/);
    expect(text).toMatch(/sample\.ts:5: a hand-written GraphQL string/);
    expect(text).toMatch(/sample\.ts:6: a hand-written GraphQL string/);
    expect(text).toMatch(/sample\.ts:7: a hand-written GraphQL template/);
    expect(text).toMatch(/sample\.ts:9: \.request\(\) is sent something other than a named document/);
    expect(text).toMatch(/sample\.ts:11: \.stream\(someDocument\) is not a document from src\/client\/generated/);
    expect(text).toMatch(/sample\.ts:12: sends a query that is not print\(<document>\): apps/);
    expect(bad.sends.map((s) => s.document)).toEqual(['ViewerDocument']);
    expect(bad.problems).toHaveLength(9);
  });

  it('has no GraphQL strings or templates, imports no GraphQL parser, and sends only documents imported from src/client/generated', () => {
    expect(files.length).toBeGreaterThanOrEqual(8);
    expect(result.problems).toEqual([]);
    // Every command module sends something, and each send names a document.
    const sending = new Set(result.sends.map((s) => path.relative(CLI_DIR, s.file)));
    for (const f of ['account.ts', 'apps.ts', 'crons.ts', 'deploy.ts', 'webhooks.ts']) expect(sending).toContain(path.join('commands', f));
    expect(result.sends.length).toBeGreaterThanOrEqual(20);
  });

  it('talks to the gateway only in api.ts, whose request and stream take a TypedDocumentNode', () => {
    expect([...result.network].map((f) => path.relative(ROOT, f))).toEqual([path.relative(ROOT, API_FILE)]);
    const api = ts.createSourceFile(API_FILE, readFileSync(API_FILE, 'utf8'), ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
    const methods = new Map<string, ts.MethodDeclaration>();
    const find = (n: ts.Node): void => {
      if (ts.isMethodDeclaration(n) && ts.isIdentifier(n.name)) methods.set(n.name.text, n);
      ts.forEachChild(n, find);
    };
    find(api);
    for (const name of ['request', 'stream']) {
      const param = methods.get(name)?.parameters[0];
      expect(param?.name.getText()).toBe('document');
      expect(param?.type && ts.isTypeReferenceNode(param.type) ? param.type.typeName.getText() : null).toBe('TypedDocumentNode');
    }
  });

  it('each document the CLI sends is a generated export whose operation is the one committed in src/client/operations', () => {
    const committed = committedOperations();
    const used = [...new Set(result.sends.map((s) => s.document))].sort();
    const exports = generated as unknown as Record<string, DocumentNode | undefined>;
    for (const name of used) {
      const doc = exports[name];
      expect([name, doc?.kind]).toEqual([name, Kind.DOCUMENT]);
      const ops = doc!.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
      expect([name, ops.length]).toEqual([name, 1]);
      const opName = ops[0].name!.value;
      expect(`${opName}Document`).toBe(name);
      expect([name, print(ops[0])]).toEqual([name, committed.get(opName)]);
    }
    // Subscriptions go over graphql-ws (stream), queries and mutations over HTTP (request).
    for (const s of result.sends) {
      const op = exports[s.document]!.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!.operation;
      expect(`${s.document} via ${s.method}`).toBe(`${s.document} via ${op === OperationTypeNode.SUBSCRIPTION ? 'stream' : 'request'}`);
    }
  });
});
