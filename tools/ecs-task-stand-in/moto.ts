/** moto: keep ECS tasks where RunTask leaves them (RUNNING) until StopTask (see `motoEndpoint`). */
export async function freezeMotoTasks(endpoint: string): Promise<void> {
  const response = await fetch(`${endpoint}/moto-api/state-manager/set-transition`, {
    method: 'POST',
    body: JSON.stringify({
      model_name: 'ecs::task',
      transition: { progression: 'manual', times: 1_000_000 },
    }),
  });
  await response.arrayBuffer();
  if (!response.ok) throw new Error(`moto's state manager answered ${response.status}`);
}
