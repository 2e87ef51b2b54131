// Checks the published declarations from their index: every type of the package that a public
// declaration refers to must itself be exported by the index, else users meet a type they can
// neither import nor count on staying put (an internal type leaked). Nothing public may be marked
// `@internal`, and the declarations must type-check on their own: a public one that names a type
// stripped as `@internal` does not.
//
//   node tools/check-declarations.mjs dist/jobs/index.d.ts [more entries]   (exits 1 and lists what is wrong)
//
// A package with several entry points (`exports` subpaths) passes each entry's index: a type any
// of them exports is public, and the first one's folder is the package.
import { dirname, relative, resolve } from 'node:path';
import ts from 'typescript';

/** What is wrong with the declarations reachable from the entries, one line each; none if nothing. */
function checkDeclarations(indexFiles) {
  const indexes = indexFiles.map((file) => resolve(file));
  const root = dirname(indexes[0]);
  const inPackage = (fileName) => resolve(fileName).startsWith(root + '/');
  const program = ts.createProgram(indexes, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    types: [],
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const problems = program
    .getSourceFiles()
    .filter((file) => inPackage(file.fileName))
    .flatMap((file) => program.getSemanticDiagnostics(file))
    .map((diagnostic) => {
      const where = diagnostic.file ? `${relative(root, diagnostic.file.fileName)}: ` : '';
      return `${where}${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`;
    });

  const target = (symbol) =>
    symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  const exported = indexes.flatMap((index) =>
    checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(index))),
  );
  const exportedTargets = new Set(exported.map(target));
  const leaks = new Map();
  const followed = new Set();
  /** A member of an exported namespace (`StandardSchemaV1.Issue`) is public through it. */
  const inExportedNamespace = (declaration) => {
    for (let node = declaration.parent; node; node = node.parent) {
      if (!ts.isModuleDeclaration(node)) continue;
      const namespace = checker.getSymbolAtLocation(node.name);
      if (namespace && exportedTargets.has(target(namespace))) return true;
    }
    return false;
  };

  /** Walks a declaration for the names it refers to; `user` is the public name it belongs to. */
  const walk = (node, user) => {
    if (ts.getJSDocTags(node).some((tag) => tag.tagName.text === 'internal')) {
      const member = ts.isConstructorDeclaration(node) ? 'constructor' : node.name?.getText();
      problems.push(`${member ? `${user}.${member}` : user} is @internal, yet published`);
    }
    const name = ts.isTypeReferenceNode(node)
      ? node.typeName
      : ts.isExpressionWithTypeArguments(node)
        ? node.expression
        : ts.isTypeQueryNode(node)
          ? node.exprName
          : ts.isImportTypeNode(node)
            ? node.qualifier
            : undefined;
    const symbol = name && checker.getSymbolAtLocation(name);
    if (symbol) {
      const referred = target(symbol);
      const declarations = referred.declarations ?? [];
      const ours = declarations.some((d) => inPackage(d.getSourceFile().fileName));
      if (
        ours &&
        !exportedTargets.has(referred) &&
        !(referred.flags & ts.SymbolFlags.TypeParameter) &&
        !declarations.some(inExportedNamespace)
      ) {
        if (referred.flags & ts.SymbolFlags.Type) {
          const file = relative(root, declarations[0].getSourceFile().fileName);
          const key = `${referred.name} (${file})`;
          leaks.set(key, (leaks.get(key) ?? new Set()).add(user));
        } else if (!followed.has(referred)) {
          // A value (the base class `JobsModule` extends, say) is no type: what its declared
          // type refers to must be public.
          followed.add(referred);
          for (const declaration of declarations) walk(declaration, user);
        }
      }
    }
    ts.forEachChild(node, (child) => walk(child, user));
  };
  for (const symbol of exported) {
    for (const declaration of target(symbol).declarations ?? []) walk(declaration, symbol.name);
  }
  for (const [leaked, users] of leaks) {
    problems.push(`${leaked} is not exported by the index, yet named by ${[...users].join(', ')}`);
  }
  return problems;
}

const entries = process.argv.slice(2);
const problems = checkDeclarations(entries.length > 0 ? entries : ['dist/jobs/index.d.ts']);
if (problems.length > 0) {
  console.error(`The declarations leak or do not type-check:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
