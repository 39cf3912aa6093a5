import type { TopicCodecs } from '../bus/event-bus';
import type { PubSub } from '../bus/pubsub';
import { accessCodecs, AccessTopics } from './accounts/access.topics';
import { deploymentCodecs, DeploymentTopics } from './deployments/deployments.topics';

/** The typed topic map of every module. */
export type Topics = DeploymentTopics & AccessTopics;

/** The gateway's pubsub, over every module's topics. */
export type GatewayPubSub = PubSub<Topics>;

/** How each topic's events travel between gateways (see src/bus). */
export const topicCodecs: TopicCodecs = { ...deploymentCodecs, ...accessCodecs };
