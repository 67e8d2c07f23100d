"""moto server (5.2.1) with IAM enforcement that checks resource ARNs where moto's does not.

Started by test/support/moto-enforcing.ts as `python3 moto_enforcing.py -H HOST -p PORT`.
Everything here patches classes in this process only; the installed moto package is untouched.

Why: moto evaluates identity policies for SQS, S3, IAM and STS against the ARN of
the resource a call names, but for every other service against "*", so a statement
scoped to a table, task, secret or log group never matches and a correctly granted
call is denied (and a statement with Resource "*" passes anything). The patch gives
DynamoDB, ECS, Secrets Manager and CloudWatch Logs the resource ARNs AWS authorises
each action on (Service Authorization Reference), and for calls AWS authorises as
several actions checks each one:
- DynamoDB TransactWriteItems / TransactGetItems: PutItem, UpdateItem, DeleteItem,
  ConditionCheckItem, GetItem per item on that item's table (there is no
  dynamodb:TransactWriteItems action to grant);
- DynamoDB Query / Scan with IndexName: the index ARN `table/T/index/I`;
- ECS RunTask: the task definition revision it resolves to (a family alone means its
  latest revision, as on AWS), plus ecs:TagResource on the cluster's tasks when the
  call carries tags (AWS checks that since 2023);
- SQS SendMessageBatch / DeleteMessageBatch / ChangeMessageVisibilityBatch: the single
  action (sqs:DeleteMessage …), as AWS authorises them; moto asks for the batch name;
- S3 GetObject by a presigned URL (how ECS tasks fetch assets): the signer's permissions,
  which moto's enforcement cannot read from a query string;
- CloudWatch Logs: stream actions (PutLogEvents, GetLogEvents) on
  `log-group:G:log-stream:S`, group actions on `log-group:G:*` (AWS matches a log
  group's ARN with the trailing `:*`, which is how CDK's logGroupArn ends).
Still not checked (moto evaluates identity policies only): conditions in identity
policies (ecs:cluster, ecs:CreateAction, iam:PassedToService, aws:SourceArn …),
resource-based policies (queue, bucket, secret, Lambda permissions), the iam:PassRole
that RunTask and RegisterTaskDefinition imply, KMS key policies, permission
boundaries and SCPs.

Every decision (allow or deny) is appended as one JSON line to RW_IAM_DECISIONS
(when set): principal, action, resource and, for an allow by an assumed role, the
role's policy statements that allowed it. Names and ARNs only, never a request body.
"""

import json
import os
import sys
import threading
from urllib.parse import parse_qs, urlparse

from moto import settings
from moto.core.authorization import ActionAuthenticatorMixin
from moto.core.responses import BaseResponse
from moto.iam.access_control import (
    AssumedRoleAccessKey,
    IAMPolicy,
    IAMPolicyStatement,
    IAMRequest,
    IAMRequestBase,
    PermissionResult,
    S3IAMRequest,
)
from moto_server import cache_service_lookup, exit_with_parent


# The same start as every other moto of the tests (moto_server.py, beside this file): exit with the
# test's worker, and route requests without listing moto's package directory each time.
exit_with_parent()
cache_service_lookup()

_decisions_path = os.environ.get("RW_IAM_DECISIONS")
_decisions_lock = threading.Lock()
_sequence = 0


def _record(entry: dict) -> None:
    global _sequence
    if not _decisions_path:
        return
    with _decisions_lock:
        _sequence += 1
        entry["seq"] = _sequence
        with open(_decisions_path, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")


def _allowing_statements(request: IAMRequestBase, resource: str) -> list:
    """The (policy name, statement index, Sid) of each assumed-role statement that allows this call."""
    key = request._access_key
    if not isinstance(key, AssumedRoleAccessKey):
        return []
    backend = request.backend
    role = key._owner_role_name
    documents = []
    for name in backend.list_role_policies(role):
        _, document = backend.get_role_policy(role, name)
        documents.append((name, document))
    attached, _ = backend.list_attached_role_policies(role)
    for policy in attached:
        documents.append((policy.name, IAMPolicy(policy)._policy_json))
    found = []
    for name, document in documents:
        parsed = json.loads(document) if isinstance(document, str) else document
        statements = parsed.get("Statement", [])
        if isinstance(statements, dict):
            statements = [statements]
        for index, statement in enumerate(statements):
            verdict = IAMPolicyStatement(statement).is_action_permitted(request._action, resource)
            if verdict == PermissionResult.PERMITTED:
                found.append([name, index, statement.get("Sid")])
    return found


_original_check = IAMRequestBase.check_action_permitted


def _check_and_record(self: IAMRequestBase, resource: str) -> None:
    principal = self._access_key.arn
    try:
        _original_check(self, resource)
    except Exception:
        _record({"decision": "deny", "principal": principal, "action": self._action, "resource": resource})
        raise
    _record(
        {
            "decision": "allow",
            "principal": principal,
            "action": self._action,
            "resource": resource,
            "statements": _allowing_statements(self, resource),
        }
    )


IAMRequestBase.check_action_permitted = _check_and_record


def _params(response: BaseResponse) -> dict:
    parsed = getattr(response, "params", None)
    if isinstance(parsed, dict) and parsed:
        return parsed
    try:
        return json.loads(response.body or "{}") if isinstance(response.body, (str, bytes)) else {}
    except ValueError:
        return {}


def _arn(response: BaseResponse, service: str, resource: str) -> str:
    return f"arn:aws:{service}:{response.region}:{response.current_account}:{resource}"


_SQS_BATCH_ACTIONS = {
    "SendMessageBatch": "SendMessage",
    "DeleteMessageBatch": "DeleteMessage",
    "ChangeMessageVisibilityBatch": "ChangeMessageVisibility",
}


def _sqs_checks(response: BaseResponse, action: str, resource: str) -> list:
    # moto asks for sqs:DeleteMessageBatch; AWS authorises a batch call as its single action.
    return [(_SQS_BATCH_ACTIONS.get(action, action), resource)]


def _dynamodb_checks(response: BaseResponse, action: str, resource: str) -> list:
    p = _params(response)

    def table(name: str) -> str:
        return name if name.startswith("arn:") else _arn(response, "dynamodb", f"table/{name}")

    if action == "TransactWriteItems":
        kinds = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem"}
        return [
            (kinds[kind], table(item[kind]["TableName"]))
            for item in p.get("TransactItems", [])
            for kind in item
            if kind in kinds
        ]
    if action == "TransactGetItems":
        return [("GetItem", table(item["Get"]["TableName"])) for item in p.get("TransactItems", []) if "Get" in item]
    if action in ("BatchWriteItem", "BatchGetItem"):
        return [(action, table(name)) for name in p.get("RequestItems", {})]
    name = p.get("TableName") or p.get("TableArn")
    if name is None:
        return [(action, "*")]
    if action in ("Query", "Scan") and p.get("IndexName"):
        return [(action, f"{table(name)}/index/{p['IndexName']}")]
    return [(action, table(name))]


def _ecs_checks(response: BaseResponse, action: str, resource: str) -> list:
    p = _params(response)
    backend = response.ecs_backend

    def cluster_name() -> str:
        return (p.get("cluster") or "default").split("/")[-1]

    def task(ref: str) -> str:
        return ref if ref.startswith("arn:") else _arn(response, "ecs", f"task/{cluster_name()}/{ref}")

    if action in ("RunTask", "StartTask"):
        try:
            definition = backend.describe_task_definition(p.get("taskDefinition", "")).arn
        except Exception:
            # Unknown definition: ECS answers ClientException; authorise on what was named.
            definition = _arn(response, "ecs", f"task-definition/{p.get('taskDefinition', '')}")
        checks = [(action, definition)]
        if p.get("tags"):
            checks.append(("TagResource", _arn(response, "ecs", f"task/{cluster_name()}/*")))
        return checks
    if action == "DescribeTasks":
        return [(action, task(t)) for t in p.get("tasks", [])] or [(action, "*")]
    if action == "StopTask":
        return [(action, task(p.get("task", "")))]
    if action in ("TagResource", "UntagResource", "ListTagsForResource"):
        return [(action, p.get("resourceArn", "*"))]
    if action == "DescribeClusters":
        return [
            (action, c if c.startswith("arn:") else _arn(response, "ecs", f"cluster/{c}"))
            for c in p.get("clusters", ["default"])
        ]
    # ListTasks, Register/Describe/List/DeregisterTaskDefinition … take no resource ARN on AWS.
    return [(action, "*")]


def _secretsmanager_checks(response: BaseResponse, action: str, resource: str) -> list:
    p = _params(response)
    backend = response.backend
    ref = p.get("SecretId") or p.get("Name")
    if ref is None:
        return [(action, "*")]
    secret = backend.secrets.get(ref) if action != "CreateSecret" else None
    if secret is not None:
        return [(action, secret.arn)]
    # Not (yet) there: the ARN AWS would evaluate, its random suffix unknown.
    return [(action, ref if ref.startswith("arn:") else _arn(response, "secretsmanager", f"secret:{ref}"))]


_LOG_STREAM_ACTIONS = {"PutLogEvents", "GetLogEvents"}


def _logs_checks(response: BaseResponse, action: str, resource: str) -> list:
    p = _params(response)
    group = p.get("logGroupName")
    identifier = p.get("logGroupIdentifier")
    if group is None and identifier is not None:
        group = identifier.split(":log-group:")[-1].removesuffix(":*") if identifier.startswith("arn:") else identifier
    if group is None:
        return [(action, "*")]
    stream = p.get("logStreamName")
    if action in _LOG_STREAM_ACTIONS and stream is not None:
        return [(action, _arn(response, "logs", f"log-group:{group}:log-stream:{stream}"))]
    return [(action, _arn(response, "logs", f"log-group:{group}:*"))]


def _s3_presigned(original):
    """S3 with a presigned URL (query-string auth): moto's enforcement reads the Authorization
    header only and answers 500 without one. AWS authorises a presigned call as the signer,
    with the signer's permissions when it is used; so authorise the credential the URL names
    for the object. moto checks neither that signature nor the expiry here."""

    def authorize(self: BaseResponse, bucket_name=None, key_name=None) -> None:
        query = parse_qs(urlparse(self.uri).query)
        if "X-Amz-Credential" not in query or self.headers.get("Authorization"):
            return original(self, bucket_name=bucket_name, key_name=key_name)
        if ActionAuthenticatorMixin.request_count < settings.INITIAL_NO_AUTH_ACTION_COUNT:
            ActionAuthenticatorMixin.request_count += 1
            return
        headers = dict(self.headers)
        headers["Authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={query['X-Amz-Credential'][0]}, SignedHeaders=host, "
            f"Signature={query.get('X-Amz-Signature', [''])[0]}"
        )
        if "X-Amz-Security-Token" in query:
            headers["X-Amz-Security-Token"] = query["X-Amz-Security-Token"][0]
        target = f"{bucket_name or '*'}/{key_name}" if key_name else (bucket_name or "*")
        request = S3IAMRequest(
            account_id=self.current_account,
            method=self.method,
            path=urlparse(self.uri).path,
            data=self.data,
            body=self.raw_body,
            headers=headers,
            action=self._get_action(),
        )
        request.check_action_permitted(f"arn:aws:s3:::{target}")

    return authorize


def _enforcing(checks):
    """`_authenticate_and_authorize_normal_action` that authorises each (action, resource) of the call."""

    def authorize(self: BaseResponse, resource: str = "*") -> None:
        if ActionAuthenticatorMixin.request_count < settings.INITIAL_NO_AUTH_ACTION_COUNT:
            ActionAuthenticatorMixin.request_count += 1
            return
        action = self._get_action()
        # The path as the client signed it, exactly as moto's own check builds it.
        parsed = urlparse(self.uri)
        path = parsed.path + (f"?{parsed.query}" if parsed.query else "")
        for index, (checked_action, checked_resource) in enumerate(checks(self, action, resource)):
            request = IAMRequest(
                account_id=self.current_account,
                method=self.method,
                path=path,
                data=self.data,
                body=self.raw_body,
                headers=self.headers,
                action=checked_action,
            )
            if index == 0:
                request.check_signature()
            request.check_action_permitted(checked_resource)

    return authorize


def _task_definition_from_template(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    """AWS::ECS::TaskDefinition with every property the runner task definitions use.

    moto's own keeps family, containers, volumes and memory only: the roles, cpu,
    FARGATE, awsvpc and runtime platform vanish, and the launcher then refuses to
    derive a per-run definition ("has no execution role"), a refusal AWS would not give.
    """
    from moto.ecs.models import ecs_backends
    from moto.core.utils import pascal_to_camelcase, remap_nested_keys

    p = cloudformation_json["Properties"]
    camel = lambda value: remap_nested_keys(value, pascal_to_camelcase)  # noqa: E731
    return ecs_backends[account_id][region_name].register_task_definition(
        family=p["Family"],
        container_definitions=camel(p.get("ContainerDefinitions", [])),
        volumes=camel(p.get("Volumes", [])),
        network_mode=p.get("NetworkMode"),
        requires_compatibilities=p.get("RequiresCompatibilities"),
        cpu=p.get("Cpu"),
        memory=p.get("Memory"),
        task_role_arn=p.get("TaskRoleArn"),
        execution_role_arn=p.get("ExecutionRoleArn"),
        runtime_platform=camel(p["RuntimePlatform"]) if "RuntimePlatform" in p else None,
        tags=[{"key": t["Key"], "value": t["Value"]} for t in p.get("Tags", [])],
    )


def _task_resources(task_definition) -> dict:
    """moto adds up container memory for RunTask and fails (HTML 500) on a container without
    its own, as a Fargate definition with task-level memory has; count such a container as 0."""
    needs = {"CPU": 0, "MEMORY": 0, "PORTS": [], "PORTS_UDP": []}
    for c in task_definition.container_definitions:
        needs["CPU"] += c.get("cpu") or c.get("Cpu") or 0
        needs["MEMORY"] += (
            c.get("memory") or c.get("Memory") or c.get("memoryReservation") or c.get("MemoryReservation") or 0
        )
        for mapping in c.get("portMappings") or c.get("PortMappings") or []:
            port = mapping.get("hostPort", mapping.get("HostPort"))
            if port is not None:
                needs["PORTS"].append(port)
    return needs


def _log_group_attribute(self, attribute_name: str) -> str:
    """`Fn::GetAtt LogGroup.Arn` is `…:log-group:NAME:*` on AWS (moto leaves off the `:*`), and the
    stack's grants on a log group are written with it."""
    if attribute_name == "Arn":
        return f"{self.arn.removesuffix(':*')}:*"
    return _original_log_group_attribute(self, attribute_name)


_original_log_group_attribute = None


def _patch() -> None:
    global _original_log_group_attribute
    from moto.dynamodb.responses import DynamoHandler
    from moto.ecs.models import EC2ContainerServiceBackend, TaskDefinition
    from moto.ecs.responses import EC2ContainerServiceResponse
    from moto.logs.models import LogGroup
    from moto.logs.responses import LogsResponse
    from moto.secretsmanager.responses import SecretsManagerResponse
    from moto.s3.responses import S3Response
    from moto.sqs.responses import SQSResponse

    S3Response._authenticate_and_authorize_s3_action = _s3_presigned(
        ActionAuthenticatorMixin._authenticate_and_authorize_s3_action
    )
    SQSResponse._authenticate_and_authorize_normal_action = _enforcing(_sqs_checks)
    DynamoHandler._authenticate_and_authorize_normal_action = _enforcing(_dynamodb_checks)
    EC2ContainerServiceResponse._authenticate_and_authorize_normal_action = _enforcing(_ecs_checks)
    SecretsManagerResponse._authenticate_and_authorize_normal_action = _enforcing(_secretsmanager_checks)
    LogsResponse._authenticate_and_authorize_normal_action = _enforcing(_logs_checks)
    _original_log_group_attribute = LogGroup.get_cfn_attribute
    LogGroup.get_cfn_attribute = _log_group_attribute
    TaskDefinition.create_from_cloudformation_json = classmethod(_task_definition_from_template)
    EC2ContainerServiceBackend._calculate_task_resource_requirements = staticmethod(_task_resources)


_patch()

from moto.server import main  # noqa: E402

main(sys.argv[1:])
