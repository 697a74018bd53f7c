import type { RibHost } from '@keelson/host';
import {
  layoutRegions,
  surfaceTabId,
  type AgentRef,
  type CommandRef,
  type RegisteredToolInfo,
  type RibSurfaceDescriptor,
  type RibViewDescriptor,
} from '@keelson/ribs-contract';
import { AgentSummary, CommandDescriptor, Rib, RibSurface, RibSurfaceRegion, RibView, ToolInfo, canvasKindOf, regionSlotOf } from './rib.type';

/** The Rib entity of an active rib, or of an installed one left inactive by the filter; null otherwise. */
export function ribEntity(host: RibHost, id: string): Rib | null {
  const rib = host.rib(id);
  if (rib) {
    return Object.assign(new Rib(), {
      id,
      displayName: rib.displayName,
      registered: true,
      hasOnAction: typeof rib.onAction === 'function',
      acceptsIngest: rib.acceptsIngest === true,
    });
  }
  const installed = host.installed().find((r) => r.id === id);
  if (!installed) return null;
  return Object.assign(new Rib(), { id, displayName: installed.packageName ?? id, registered: false, hasOnAction: false, acceptsIngest: false });
}

export function toView(view: RibViewDescriptor): RibView {
  return Object.assign(new RibView(), { key: view.key, canvasKind: canvasKindOf(view.canvasKind), title: view.title ?? null });
}

export function toSurface(ribId: string, surface: RibSurfaceDescriptor): RibSurface {
  return Object.assign(new RibSurface(), {
    id: surface.id,
    tabId: surfaceTabId(ribId, surface.id),
    title: surface.title,
    heading: surface.heading ?? null,
    subtitle: surface.subtitle ?? null,
    projectScoped: surface.projectScoped === true,
    hideRegionActions: surface.hideRegionActions === true,
    badgeKey: surface.badgeKey ?? null,
    layout: surface.layout,
    regions: layoutRegions(surface.layout).map(({ slot, region }) =>
      Object.assign(new RibSurfaceRegion(), {
        key: region.key,
        slot: regionSlotOf(slot),
        title: region.title ?? null,
        workflow: region.workflow ?? null,
        cadenceMs: region.cadenceMs ?? null,
        serverRefresh: region.serverRefresh ?? null,
        live: region.live === true,
        headActions: region.headActions ?? null,
        descriptor: region,
      }),
    ),
  });
}

export function toToolInfo(tool: RegisteredToolInfo): ToolInfo {
  return Object.assign(new ToolInfo(), {
    name: tool.name,
    description: tool.description,
    family: tool.family,
    ownerRibId: tool.ownerRibId ?? null,
    stateChanging: tool.state_changing,
    requiresConfirmation: tool.requires_confirmation,
  });
}

export function toAgent(agent: AgentRef): AgentSummary {
  return Object.assign(new AgentSummary(), { ribId: agent.ribId, slug: agent.slug, name: agent.name, description: agent.description ?? null });
}

export function toCommand(command: CommandRef): CommandDescriptor {
  return Object.assign(new CommandDescriptor(), {
    ribId: command.ribId,
    name: command.name,
    description: command.description,
    argumentHint: command.argument?.hint ?? null,
    completes: command.argument?.completes === true,
  });
}
