import type { Task } from '@aws-sdk/client-ecs';
import type { EcsTaskStateChangeEvent } from '../../shared/adapters/ecs/task-event.ts';

/** How a task ended, as ECS reports it in DescribeTasks and in its STOPPED event. */
export interface TaskOutcome {
  readonly stopCode: 'EssentialContainerExited' | 'UserInitiated' | 'TaskFailedToStart';
  readonly stoppedReason: string;
  /** The container's exit code; absent when it never started. */
  readonly exitCode?: number;
  /** The container's own reason (`CannotStartContainerError: …`), when ECS gives one. */
  readonly containerReason?: string;
}

export interface TaskChange {
  readonly lastStatus: 'PROVISIONING' | 'RUNNING' | 'STOPPED';
  readonly desiredStatus: 'RUNNING' | 'STOPPED';
  /** ECS counts every change of a task; a consumer keeps the highest it applied. */
  readonly version: number;
  readonly containerName: string;
  readonly outcome?: TaskOutcome;
  readonly at: Date;
}

/**
 * An EventBridge "ECS Task State Change" event, in the shape ECS sends it
 * (https://docs.aws.amazon.com/AmazonECS/latest/developerguide/ecs_task_events.html),
 * filled from the task as DescribeTasks shows it and the change the stand-in made.
 */
export function taskStateChangeEvent(
  task: Task,
  change: TaskChange,
  region: string,
): EcsTaskStateChangeEvent {
  const taskArn = task.taskArn ?? '';
  const account = taskArn.split(':')[4] ?? '';
  const time = change.at.toISOString();
  const container = task.containers?.find((c) => c.name === change.containerName) ?? task.containers?.[0];
  const outcome = change.outcome;
  return {
    version: '0',
    id: `${taskArn.split('/').at(-1)}-${change.version}`,
    'detail-type': 'ECS Task State Change',
    source: 'aws.ecs',
    account,
    time,
    region,
    resources: [taskArn],
    detail: {
      clusterArn: task.clusterArn,
      taskArn,
      taskDefinitionArn: task.taskDefinitionArn,
      group: task.group,
      startedBy: task.startedBy,
      launchType: task.launchType ?? 'FARGATE',
      lastStatus: change.lastStatus,
      desiredStatus: change.desiredStatus,
      version: change.version,
      createdAt: task.createdAt?.toISOString() ?? time,
      updatedAt: time,
      overrides: task.overrides ?? {},
      containers: [
        {
          containerArn: container?.containerArn,
          name: container?.name ?? change.containerName,
          taskArn,
          lastStatus: change.lastStatus,
          ...(outcome?.exitCode === undefined ? {} : { exitCode: outcome.exitCode }),
          ...(outcome?.containerReason === undefined ? {} : { reason: outcome.containerReason }),
        },
      ],
      ...(outcome === undefined
        ? {}
        : { stopCode: outcome.stopCode, stoppedReason: outcome.stoppedReason, stoppedAt: time }),
    },
  };
}
