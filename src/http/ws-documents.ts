import { DocumentNode, GraphQLError, GraphQLSchema, parse, ParseOptions, Source, validate } from 'graphql';

/** Operation texts longer than this are parsed and validated for each operation, never remembered. */
const MAX_REMEMBERED_TEXT = 16 * 1024;
/** Valid documents remembered at most; the oldest goes first. */
const MAX_DOCUMENTS = 1000;

/**
 * graphql-ws parses and validates every `subscribe` on its own: two thousand people following
 * one log held two thousand copies of the same syntax tree (with its tokens and locations, about
 * a third of an idle subscriber's memory) and each was validated again. Here a text that parsed
 * into a valid document is parsed once: later subscribers with the same text get the same
 * document (graphql-js never changes one), already validated. Only valid documents are kept, so
 * a client sending wrong operations fills nothing, and their errors are made afresh each time.
 */
export function sharedDocuments(schema: GraphQLSchema) {
  const documents = new Map<string, DocumentNode>();
  const valid = new WeakSet<DocumentNode>();
  return {
    /** graphql-ws `parse`: the remembered document for this text, else a new one. */
    parse: (source: string | Source, options?: ParseOptions): DocumentNode => {
      if (typeof source === 'string' && options === undefined) {
        const known = documents.get(source);
        if (known) return known;
      }
      return parse(source, options);
    },
    /** graphql-ws `validate`: a remembered document is valid; a new one that is becomes remembered. */
    validate: (against: GraphQLSchema, document: DocumentNode): readonly GraphQLError[] => {
      if (against !== schema) return validate(against, document);
      if (valid.has(document)) return [];
      const errors = validate(schema, document);
      const text = document.loc?.source.body;
      if (errors.length === 0 && text !== undefined && text.length <= MAX_REMEMBERED_TEXT) {
        if (documents.size >= MAX_DOCUMENTS) documents.delete(documents.keys().next().value!);
        documents.set(text, document);
        valid.add(document);
      }
      return errors;
    },
  };
}
