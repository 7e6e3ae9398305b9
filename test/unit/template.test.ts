import { describe, expect, it } from 'vitest'
import { RenderError } from '../../src/domain/errors.js'
import { compileTemplate, renderTemplates, templateIncludes, templateVariables } from '../../src/domain/template.js'

describe('templates', () => {
  it('inserts plain and dotted variables, keeping the text around them', () => {
    const [out] = renderTemplates(['Hi {{ user.name }}, you are {{age}}: {{ input }}!'], {
      user: { name: 'Ada' },
      age: 36,
      input: 'hello',
    })
    expect(out).toBe('Hi Ada, you are 36: hello!')
  })

  it('renders objects as JSON and keeps booleans and zero', () => {
    expect(renderTemplates(['{{a}}|{{b}}|{{c}}'], { a: { x: [1] }, b: false, c: 0 })).toEqual(['{"x":[1]}|false|0'])
  })

  it('names every missing variable in one RENDER error, never rendering an empty string', () => {
    let error: unknown
    try {
      renderTemplates(['{{input}}', '{{ user.name }} {{input}}'], { user: {} })
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(RenderError)
    expect((error as RenderError).code).toBe('RENDER')
    expect((error as RenderError).message).toBe("missing variables 'input', 'user.name'")
  })

  it('treats null as missing and does not read inherited properties', () => {
    expect(() => renderTemplates(['{{a}}'], { a: null })).toThrow("missing variable 'a'")
    expect(() => renderTemplates(['{{ toString }}'], {})).toThrow("missing variable 'toString'")
  })

  it('rejects malformed references at compile time', () => {
    expect(compileTemplate('{{ not valid }}').error).toMatch(/not a variable reference/)
    expect(compileTemplate('open {{ name').error).toMatch(/unclosed/)
    expect(compileTemplate('fine {{ a.b_c }} text').error).toBeUndefined()
  })

  it('reads includes with a version, a label or bindings, and refuses malformed ones at compile time', () => {
    expect(templateIncludes(['{{> intro}} {{> tone@beta}}', '{{> sign#3 name=author.name}} {{> intro}}'])).toEqual([
      { promptId: 'intro', version: null, label: null, bindings: null, key: 'intro' },
      { promptId: 'tone', version: null, label: 'beta', bindings: null, key: 'tone@beta' },
      { promptId: 'sign', version: 3, label: null, bindings: { name: 'author.name' }, key: 'sign#3' },
    ])
    expect(compileTemplate('{{> }}').error).toMatch(/does not name a prompt/)
    expect(compileTemplate('{{> a#0}}').error).toMatch(/does not name a prompt/)
    expect(compileTemplate('{{> a name}}').error).toMatch(/'name' in '\{\{> a name\}\}' is not a binding/)
  })

  it('renders an include through the given text, binding only what it names', () => {
    const seen: Record<string, unknown>[] = []
    const included = (_ref: unknown, variables: Record<string, unknown>) => {
      seen.push(variables)
      return '[inc]'
    }
    expect(renderTemplates(['a {{> x}} b {{> y who=user.name}}'], { user: { name: 'Ada' }, other: 1 }, included)).toEqual([
      'a [inc] b [inc]',
    ])
    expect(seen).toEqual([{ user: { name: 'Ada' }, other: 1 }, { who: 'Ada' }])
    expect(() => renderTemplates(['{{> y who=user.name}}'], {}, included)).toThrow("missing variable 'user.name'")
  })

  it('lists variables in order of first use, the paths includes bind among them', () => {
    expect(templateVariables(['{{> x who=u.name}}'])).toEqual(['u.name'])
    expect(templateVariables(['{{b}} {{a}}', '{{ b }} {{c.d}}'])).toEqual(['b', 'a', 'c.d'])
  })
})
