import type { Dataset, DatasetItem, DatasetVersion } from '../domain/datasets.js'
import { InvalidRequestError, NotFoundError } from '../domain/errors.js'
import { builder } from './builder.js'
import { encodeCursor, forwardPage, pageArgs, toConnection } from './paging.js'

const DatasetVersionRef = builder.objectRef<DatasetVersion>('DatasetVersion').implement({
  description: 'One version of a dataset: made by adding or removing items, never changed after.',
  fields: (t) => ({
    version: t.exposeInt('version', { description: 'Its number, from 1.' }),
    itemCount: t.exposeInt('itemCount', { description: 'How many items it holds.' }),
    createdAt: t.field({ type: 'DateTime', description: 'When it was made.', resolve: (v) => v.createdAt }),
  }),
})

export const DatasetItemRef = builder.objectRef<DatasetItem>('DatasetItem').implement({
  description: 'An input for experiments, with what its answer should be. Never changed: a new version adds or removes items.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Its id, the same in every version that holds it.' }),
    variables: t.field({ type: 'JSON', description: "The prompt's template variables.", resolve: (i) => i.variables }),
    input: t.exposeString('input', { nullable: true, description: "The user's text (a plain input, or the prompt's input variable)." }),
    expected: t.field({
      type: 'JSON',
      nullable: true,
      description: 'What the answer should be, for the scorers that compare with it.',
      resolve: (i) => i.expected,
    }),
    metadata: t.field({ type: 'JSON', nullable: true, description: 'Anything else kept with it.', resolve: (i) => i.metadata }),
    sourceRunId: t.exposeID('sourceRunId', { nullable: true, description: 'The run it was taken from (addRunToDataset).' }),
    addedIn: t.exposeInt('addedIn', { description: 'The version that added it.' }),
  }),
})

const DatasetItemConnection = builder.connectionObject({ type: DatasetItemRef, name: 'DatasetItemConnection' })
const itemCursor = (item: DatasetItem) => encodeCursor('dataset-item', String(item.position))

const DatasetRef = builder.objectRef<Dataset>('Dataset').implement({
  description: 'A named set of inputs for experiments, versioned: an experiment names the version it runs.',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Its id, per tenant.' }),
    description: t.exposeString('description', { nullable: true, description: 'What it holds.' }),
    version: t.exposeInt('version', { description: 'Its newest version; 0 before any item was added.' }),
    createdAt: t.field({ type: 'DateTime', description: 'When it was created.', resolve: (d) => d.createdAt }),
    versions: t.field({
      type: [DatasetVersionRef],
      description: 'Every version, oldest first.',
      resolve: (d, _args, ctx) => ctx.services.datasets.versions(ctx.tenantId, d.id),
    }),
    items: t.field({
      type: DatasetItemConnection,
      description: 'The items of a version (the newest by default), in the order they were added. Forward paging only.',
      args: { version: t.arg.int({ description: 'The version; default the newest.' }), ...pageArgs(t.arg) },
      resolve: async (d, args, ctx) => {
        const { first, after } = forwardPage(args, 'dataset-item', 1)
        const rows = await ctx.services.datasets.items(ctx.tenantId, d.id, args.version ?? null, after ? Number(after[0]) : 0, first + 1)
        return toConnection(rows, first, after !== null, itemCursor)
      },
    }),
  }),
})

builder.queryField('dataset', (t) =>
  t.field({
    type: DatasetRef,
    nullable: true,
    description: 'A dataset by id, or null.',
    args: { id: t.arg.id({ required: true, description: 'The dataset id.' }) },
    resolve: (_root, { id }, ctx) => ctx.services.datasets.get(ctx.tenantId, String(id)),
  }),
)

const DatasetItemInput = builder.inputType('DatasetItemInput', {
  description: 'An item to add: what a run of it is given, and what its answer should be.',
  fields: (t) => ({
    variables: t.field({ type: 'JSON', required: true, description: "The prompt's template variables (a JSON object; {} for none)." }),
    input: t.string({ description: "The user's text." }),
    expected: t.field({ type: 'JSON', description: 'What the answer should be.' }),
    metadata: t.field({ type: 'JSON', description: 'Anything else to keep with it (a JSON object).' }),
  }),
})

const DatasetPayload = builder.objectRef<{ dataset: Dataset }>('CreateDatasetPayload').implement({
  description: 'The dataset created.',
  fields: (t) => ({ dataset: t.field({ type: DatasetRef, description: 'Empty, at version 0.', resolve: (p) => p.dataset }) }),
})

const VersionPayload = builder.objectRef<{ datasetId: string; version: DatasetVersion }>('DatasetVersionPayload').implement({
  description: 'The version a change of items made, written.',
  fields: (t) => ({
    version: t.field({ type: DatasetVersionRef, description: 'The new version.', resolve: (p) => p.version }),
    dataset: t.field({
      type: DatasetRef,
      description: 'The dataset, now at that version.',
      resolve: async (p, _args, ctx) => (await ctx.services.datasets.get(ctx.tenantId, p.datasetId))!,
    }),
  }),
})

builder.mutationField('createDataset', (t) =>
  t.field({
    type: DatasetPayload,
    description: 'Creates an empty dataset; an id already taken is INVALID_REQUEST.',
    errors: { types: [InvalidRequestError] },
    args: {
      input: t.arg({
        type: builder.inputType('CreateDatasetInput', {
          description: 'A new dataset.',
          fields: (f) => ({
            id: f.id({ required: true, description: '1-128 characters of A-Z a-z 0-9 _ . -' }),
            description: f.string({ description: 'What it holds.' }),
          }),
        }),
        required: true,
        description: 'Its id and description.',
      }),
    },
    resolve: async (_root, { input }, ctx) => ({ dataset: await ctx.services.datasets.create(ctx.tenantId, input) }),
  }),
)

builder.mutationField('addDatasetItems', (t) =>
  t.field({
    type: VersionPayload,
    description: 'Adds items as a new version (the earlier versions keep theirs); answers once it is written.',
    errors: { types: [InvalidRequestError, NotFoundError] },
    args: {
      input: t.arg({
        type: builder.inputType('AddDatasetItemsInput', {
          description: 'Items for a dataset.',
          fields: (f) => ({
            datasetId: f.id({ required: true, description: 'The dataset.' }),
            items: f.field({ type: [DatasetItemInput], required: true, description: 'From 1 to 10 000 items.' }),
          }),
        }),
        required: true,
        description: 'The dataset and its new items.',
      }),
    },
    resolve: async (_root, { input }, ctx) => ({
      datasetId: String(input.datasetId),
      version: await ctx.services.datasets.addItems(ctx.tenantId, input),
    }),
  }),
)

builder.mutationField('removeDatasetItems', (t) =>
  t.field({
    type: VersionPayload,
    description: 'Removes items as a new version (the earlier versions keep them); every item named must be in the newest version.',
    errors: { types: [InvalidRequestError, NotFoundError] },
    args: {
      input: t.arg({
        type: builder.inputType('RemoveDatasetItemsInput', {
          description: 'Items to remove from a dataset.',
          fields: (f) => ({
            datasetId: f.id({ required: true, description: 'The dataset.' }),
            itemIds: f.idList({ required: true, description: 'The items (DatasetItem.id).' }),
          }),
        }),
        required: true,
        description: 'The dataset and the items to remove.',
      }),
    },
    resolve: async (_root, { input }, ctx) => ({
      datasetId: String(input.datasetId),
      version: await ctx.services.datasets.removeItems(ctx.tenantId, { ...input, itemIds: input.itemIds.map(String) }),
    }),
  }),
)

builder.mutationField('addRunToDataset', (t) =>
  t.field({
    type: VersionPayload,
    description: "Adds a past run's variables and input as an item (a new version), with the answer it should have given.",
    errors: { types: [InvalidRequestError, NotFoundError] },
    args: {
      input: t.arg({
        type: builder.inputType('AddRunToDatasetInput', {
          description: 'A run to keep as an item.',
          fields: (f) => ({
            datasetId: f.id({ required: true, description: 'The dataset.' }),
            runId: f.id({ required: true, description: 'The run whose request the item takes.' }),
            expected: f.field({ type: 'JSON', description: 'What its answer should be.' }),
          }),
        }),
        required: true,
        description: 'The dataset, the run, and the expected answer.',
      }),
    },
    resolve: async (_root, { input }, ctx) => ({
      datasetId: String(input.datasetId),
      version: await ctx.services.datasets.addRun(ctx.tenantId, input),
    }),
  }),
)
