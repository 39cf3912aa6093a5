import { randomBytes } from 'node:crypto';
import { AddCollaboratorDocument, CreateAppDocument, DeployDocument, DeploymentStatusDocument } from '../../src/client/generated';
import { Gateway } from '../../src/app';
import { collect, gqlOk, waitForItem, wsClient } from './gateway';

export const unique = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;

export interface TestUser {
  id: string;
  email: string;
  token: string;
}

export async function makeUser(gateway: Gateway, email = `${unique('user')}@example.com`): Promise<TestUser> {
  const { user, token } = await gateway.services.accounts.createUser(email);
  return { id: user.id, email: user.email, token };
}

export async function makeApp(url: string, owner: TestUser, slug = unique('egg')) {
  return (await gqlOk(url, owner.token, CreateAppDocument, { slug })).createApp;
}

export async function deploy(url: string, user: TestUser, project: string, env?: Record<string, string>) {
  return (await gqlOk(url, user.token, DeployDocument, { input: { project, env } })).deploy;
}

/** Resolves with the final status once the deployment leaves BUILDING, watched over graphql-ws. */
export async function settle(url: string, user: TestUser, id: string): Promise<string> {
  const client = wsClient(url, user.token);
  try {
    const stream = collect(client, DeploymentStatusDocument, { id });
    const items = await waitForItem(stream, (i) => i.deploymentStatus.status !== 'BUILDING');
    stream.unsubscribe();
    return items[items.length - 1].deploymentStatus.status;
  } finally {
    await client.dispose();
  }
}

/** A new egg of `owner` (a new user when omitted), deployed and LIVE: the deployment's id, and its owner. */
export async function liveDeployment(t: { gateway: Gateway; url: string }, owner?: TestUser): Promise<{ id: string; user: TestUser }> {
  const user = owner ?? (await makeUser(t.gateway));
  const d = await deploy(t.url, user, (await makeApp(t.url, user)).slug);
  const status = await settle(t.url, user, d.id);
  if (status !== 'LIVE') throw new Error(`deployment ${d.id} settled ${status}, not LIVE`);
  return { id: d.id, user };
}

/** An ISO 8601 UTC timestamp with milliseconds, as every API response writes them. */
export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export interface EggWithPeople {
  owner: TestUser;
  collaborator: TestUser;
  stranger: TestUser;
  slug: string;
}

/** A fresh egg with an owner, a collaborator and a stranger, optionally on another tier. */
export async function makeEggWithPeople(t: { gateway: Gateway; url: string }, tier?: 'free' | 'always_on'): Promise<EggWithPeople> {
  const owner = await makeUser(t.gateway);
  const collaborator = await makeUser(t.gateway);
  const stranger = await makeUser(t.gateway);
  const { slug } = await makeApp(t.url, owner);
  await gqlOk(t.url, owner.token, AddCollaboratorDocument, { app: slug, email: collaborator.email });
  if (tier) await t.gateway.services.apps.setTier(slug, tier);
  return { owner, collaborator, stranger, slug };
}
