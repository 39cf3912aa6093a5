import { Arg, Ctx, FieldResolver, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { Context } from '../../graphql/context';
import { App } from '../apps/app.entity';
import { Volume, VOLUME_MOUNT } from './volume.entity';
import { ProvisionVolumeInput } from './volumes.inputs';
import { VolumeChange } from './volumes.outputs';

/** The runtime's usage reading per Volume object of a response (usedMb and overQuota share it). */
const usage = new WeakMap<Volume, Promise<number>>();

@Resolver(() => Volume)
export class VolumesResolver {
  @Query(() => Volume, { description: 'The egg’s volume; NOT_FOUND when it has none.' })
  volume(@Ctx() ctx: Context, @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string): Promise<Volume> {
    return ctx.services.volumes.get(ctx.actor, app);
  }

  @Mutation(() => VolumeChange, {
    description: 'Provisions the egg’s volume, or resizes it (restoring one in its grace period). Mounted at /data from the next deploy.',
  })
  provisionVolume(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('input', () => ProvisionVolumeInput, { description: 'The size.' }) input: ProvisionVolumeInput,
  ): Promise<VolumeChange> {
    return ctx.services.volumes.provision(ctx.actor, app, input);
  }

  @Mutation(() => Volume, {
    nullable: true,
    description:
      'Detaches the volume and erases it after 7 days (returns it, GRACE_DELETING); with `now: true` erases it at once, irreversibly (returns null).',
  })
  deleteVolume(
    @Ctx() ctx: Context,
    @Arg('app', () => String, { description: 'The egg’s slug.' }) app: string,
    @Arg('now', () => Boolean, { nullable: true, description: 'Erase immediately and irreversibly.' }) now?: boolean | null,
  ): Promise<Volume | null> {
    return ctx.services.volumes.delete(ctx.actor, app, now === true);
  }

  @FieldResolver(() => Int, { description: 'Space used in MB, as the runtime reports it.' })
  usedMb(@Root() volume: Volume, @Ctx() ctx: Context): Promise<number> {
    // Asked once per volume object: `overQuota` reads the same answer.
    let used = usage.get(volume);
    if (!used) {
      used = ctx.loaders.appById.load(volume.appId).then((app) => ctx.services.volumes.usedMb(app!.slug));
      usage.set(volume, used);
    }
    return used;
  }

  @FieldResolver(() => Boolean, { description: 'Whether the used space exceeds the size.' })
  async overQuota(@Root() volume: Volume, @Ctx() ctx: Context): Promise<boolean> {
    return (await this.usedMb(volume, ctx)) > volume.sizeMb;
  }

  @FieldResolver(() => String, { description: 'Where the volume is mounted: /data.' })
  mount(): string {
    return VOLUME_MOUNT;
  }
}

@Resolver(() => App)
export class AppVolumeResolver {
  @FieldResolver(() => Volume, { nullable: true, description: 'The egg’s persistent volume, if any.' })
  volume(@Root() app: App, @Ctx() ctx: Context): Promise<Volume | null> {
    return ctx.loaders.volumeByAppId.load(app.id);
  }
}
