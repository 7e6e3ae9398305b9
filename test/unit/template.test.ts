import { describe, expect, it } from 'vitest'
import { RenderError } from '../../src/domain/errors.js'
import { compileTemplate, renderTemplates, templateVariables } from '../../src/domain/template.js'

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

  it('lists variables in order of first use', () => {
    expect(templateVariables(['{{b}} {{a}}', '{{ b }} {{c.d}}'])).toEqual(['b', 'a', 'c.d'])
  })
})
