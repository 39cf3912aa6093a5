import 'reflect-metadata';
import { GraphQLInputObjectType, GraphQLList, GraphQLNonNull, GraphQLString } from 'graphql';
import { checkInput, RestFieldError } from '../../src/rest/validate';

/**
 * checkInput on its own. Keys that only Object.prototype has are unknown fields too: graphql-js
 * field maps have no prototype today, and Object.hasOwn keeps that true whatever map it is given.
 */
describe('checkInput', () => {
  const Input = new GraphQLInputObjectType({
    name: 'SampleInput',
    fields: { url: { type: new GraphQLNonNull(GraphQLString) }, events: { type: new GraphQLList(new GraphQLNonNull(GraphQLString)) } },
  });
  const check = (value: unknown) => {
    const errors: RestFieldError[] = [];
    checkInput(value, Input, 'input', errors);
    return errors;
  };

  it.each(['toString', 'constructor', 'hasOwnProperty', 'valueOf', '__proto__'])('an own key %s that is no field of the input is refused as unknown', (key) => {
    expect(check(JSON.parse(`{"url": "https://example.com/", ${JSON.stringify(key)}: "x"}`))).toEqual([
      { field: `input.${key}`, message: 'is not a known field', asSent: true },
    ]);
  });

  it('a list field takes an array, not a single value', () => {
    expect(check({ url: 'https://example.com/', events: 'deploy' })).toEqual([{ field: 'input.events', message: 'must be an array' }]);
    expect(check({ url: 'https://example.com/', events: ['deploy'] })).toEqual([]);
  });
});
